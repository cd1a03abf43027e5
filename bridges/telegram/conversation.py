"""One chat turn: history → recall → inject → model → reply → history → ingestion.

Per incoming message (already admitted by bridges.telegram.access):
1. the user's turn is stored as *pending* in the chat history (unless `/private` asked for the
   message not to be stored);
2. the request is built from the last `[telegram] history_turns` turns plus this one and goes
   through tap's interception core (tap.intercept.core.Interceptor.prepare), exactly as a proxied
   request does: the memories of the chat's scope relevant to the message are recalled under
   `[telegram] recall_deadline_ms` (minus those already visible in the history it sends) and
   injected by the dialect — on a timeout or an error the request goes out without memories
   (degrade, never fail);
3. "typing" is shown every ~4 s while the model works; after `[telegram] reply_timeout_s` (or at
   once when the model is down) the user gets a short apology, and the turn stays pending:
   `/retry` answers it, and the next answered message folds it in;
4. the answer is sent (split, Markdown with plain fallback), the turn is marked answered, the
   call is billed in the cost ledger (purpose "telegram-reply"), and the exchange goes through
   the core's after-step (turn log, then the one ingestion entry point) with
   `source = "telegram"`.

Invariants: turns of one chat are handled one at a time, in arrival order (the bridge processes
each chat's updates in order: bridges.telegram.ordering); memories come from the chat's scope only;
a `/private` message is answered but neither stored in the history nor ingested; memories are
offered again on later turns (the history tap sends does not carry earlier blocks), except those
whose source turns are all in that history or whose text is in it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from bridges.telegram.chats import ChatKey
from bridges.telegram.db import TelegramDB, TurnRow
from bridges.telegram.model import ChatLine, build_request
from bridges.telegram.send import Sender, keep_typing
from tap.config import TelegramConfig
from tap.errors import ProviderError
from tap.extract.costs import CostLedger
from tap.intercept.core import Interception, Interceptor
from tap.intercept.dialects import JsonObject
from tap.intercept.dialects import Reply as WireReply
from tap.intercept.reply_model import ReplyModel
from tap.llm import ChatReply, cost_usd
from tap.records import Message
from tap.runtime.tasks import create_task

log = logging.getLogger(__name__)
TYPING_INTERVAL_S = 4.0
PURPOSE = "telegram-reply"


@dataclass(frozen=True)
class Incoming:
    """An admitted text message."""

    key: ChatKey
    message_id: int
    user_id: int
    author: str
    text: str
    private: bool = False


class ChatResponder:
    """Answers admitted messages, chat by chat."""

    def __init__(
        self,
        cfg: TelegramConfig,
        *,
        db: TelegramDB,
        intercept: Interceptor,
        ledger: CostLedger,
        model: ReplyModel,
        sender: Sender,
        typing_interval_s: float = TYPING_INTERVAL_S,
    ) -> None:
        self.cfg = cfg
        self.db = db
        self.intercept = intercept
        self.ledger = ledger
        self.model = model
        self.sender = sender
        self.typing_interval_s = typing_interval_s

    async def on_message(self, msg: Incoming) -> None:
        """Answer one message (see the module docstring)."""
        if msg.private:
            history = self.db.history(msg.key.conversation, before=None, limit=self.cfg.history_turns)
            await self._answer(msg.key, history, msg.author, msg.text, msg.message_id, None)
            return
        turn = self.db.add_turn(msg.key.conversation, msg.message_id, msg.user_id, msg.author, msg.text)
        if turn.pending:
            await self._answer_turn(msg.key, turn)

    async def retry(self, key: ChatKey) -> bool:
        """Answer the chat's newest pending turn again; False when there is none."""
        turn = self.db.last_pending(key.conversation)
        if turn is None:
            return False
        await self._answer_turn(key, turn)
        return True

    async def _answer_turn(self, key: ChatKey, turn: TurnRow) -> None:
        history = self.db.history(key.conversation, before=turn.id, limit=self.cfg.history_turns)
        await self._answer(key, history, turn.author, turn.user_text, turn.message_id, turn)

    async def _answer(
        self, key: ChatKey, history: list[TurnRow], author: str, text: str, message_id: int, turn: TurnRow | None
    ) -> None:
        request = build_request(self.cfg, [*self._lines(key, history), ChatLine("user", self._said(key, author, text))])
        visible = {turn_id(key, t.message_id) for t in history} | {reply_id(key, t.message_id) for t in history}
        answered = await self._think_visibly(key, request, visible, message_id, stored=turn is not None)
        if answered is None:
            return
        reply, context = answered
        await self._bill(reply)  # billed even if Telegram then fails to take the answer
        await self.sender.markdown(key, reply.text, reply_to=message_id if key.is_group else None)
        if turn is not None:
            folded = self.db.answer(turn.id, reply.text)
            await self._capture(key, context, [*folded, turn], reply)

    async def _think_visibly(
        self, key: ChatKey, request: JsonObject, visible: set[str], message_id: int, *, stored: bool
    ) -> tuple[ChatReply, Interception | None] | None:
        """The model's reply while "typing" shows; None (after an apology) on timeout or failure."""
        stop = asyncio.Event()
        typing = create_task(keep_typing(self.sender, key, stop, self.typing_interval_s), name=f"typing-{key.scope}")
        try:
            thinking = self._think(key, request, visible, message_id, stored=stored)
            return await asyncio.wait_for(thinking, self.cfg.reply_timeout_s)
        except TimeoutError:
            log.warning("telegram: no reply from the model within %g s (%s)", self.cfg.reply_timeout_s, key.scope)
            await self._apologise(
                key, message_id, f"the model did not answer within {self.cfg.reply_timeout_s:g} s", stored
            )
        except ProviderError as exc:
            log.warning("telegram: the reply model failed (%s): %s", key.scope, exc)
            await self._apologise(key, message_id, "I could not get an answer from the model just now", stored)
        finally:
            stop.set()
            await typing
        return None

    async def _think(
        self, key: ChatKey, request: JsonObject, visible: set[str], message_id: int, *, stored: bool
    ) -> tuple[ChatReply, Interception | None]:
        """Recall and inject through the core (degrading on its own), then ask the model."""
        prepared = await self.intercept.prepare(
            self.model.dialect,
            request,
            scope=key.scope,
            conversation=key.conversation,
            source="telegram",
            turn_id=turn_id(key, message_id),
            visible_turns=visible,
            deadline_ms=self.cfg.recall_deadline_ms,
            capture=stored,
        )
        return await self.model.complete(prepared.request), prepared.context

    async def _apologise(self, key: ChatKey, message_id: int, why: str, stored: bool) -> None:
        then = (
            "Your message is saved: send /retry to try again."
            if stored
            else "This message was private, so it is not saved: please send it again."
        )
        await self.sender.html(key, f"Sorry — {why}. {then}", reply_to=message_id)

    def _lines(self, key: ChatKey, history: list[TurnRow]) -> list[ChatLine]:
        lines: list[ChatLine] = []
        for turn in history:
            lines.append(ChatLine("user", self._said(key, turn.author, turn.user_text)))
            if turn.reply_text:
                lines.append(ChatLine("assistant", turn.reply_text))
        return lines

    @staticmethod
    def _said(key: ChatKey, author: str, text: str) -> str:
        """In groups the model needs to know who is speaking."""
        return f"{author}: {text}" if key.is_group and author else text

    async def _bill(self, reply: ChatReply) -> None:
        usage = reply.usage
        try:
            await asyncio.to_thread(
                self.ledger.record,
                provider=usage.provider,
                model=usage.model,
                purpose=PURPOSE,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cost_usd=cost_usd(usage),
            )
        except Exception:
            log.exception("telegram: could not record the reply's cost")

    async def _capture(
        self, key: ChatKey, context: Interception | None, turns: list[TurnRow], reply: ChatReply
    ) -> None:
        """Hand the exchange to the core's after-step (turn log, ingestion); failures are logged there."""
        if context is None:
            return
        messages = [
            Message(
                role="user", content=t.user_text, name=t.author, id=turn_id(key, t.message_id), timestamp=t.created_at
            )
            for t in turns
        ]
        usage = {"input_tokens": reply.usage.input_tokens, "output_tokens": reply.usage.output_tokens}
        wire = WireReply(text=reply.text, model=reply.usage.model, usage=usage, complete=True)
        task = self.intercept.after(
            context, wire, user=messages[-1], earlier=messages[:-1], reply_id=reply_id(key, turns[-1].message_id)
        )
        if task is not None:
            await task


def turn_id(key: ChatKey, message_id: int) -> str:
    """A stable id for a Telegram message (the same on a retry, unique across chats)."""
    return f"tg-{key.chat_id}-{message_id}"


def reply_id(key: ChatKey, message_id: int) -> str:
    """The id of the bot's reply to a Telegram message."""
    return turn_id(key, message_id) + "-reply"
