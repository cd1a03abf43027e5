"""proxy.signin on its own clock: a code works once and for a minute; a session ends when idle or
old; a code never is a session token."""

from __future__ import annotations

from proxy.signin import CODE_S, MAX_PENDING, SESSION_IDLE_S, SESSION_MAX_S, SignIns


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_code_works_once_and_for_a_minute() -> None:
    clock = Clock()
    signins = SignIns(clock)
    code = signins.new_code()
    assert not signins.valid(code)  # a code is no session
    token = signins.open_session(code)
    assert token is not None and signins.valid(token)
    assert signins.open_session(code) is None  # used up
    late = signins.new_code()
    clock.now += CODE_S + 1
    assert signins.open_session(late) is None


def test_a_session_ends_when_idle_or_old_or_signed_out() -> None:
    clock = Clock()
    signins = SignIns(clock)
    idle = signins.open_session(signins.new_code())
    busy = signins.open_session(signins.new_code())
    out = signins.open_session(signins.new_code())
    assert idle and busy and out
    signins.end(out)
    assert not signins.valid(out)
    for _ in range(int(SESSION_MAX_S // (SESSION_IDLE_S / 2))):
        clock.now += SESSION_IDLE_S / 2
        assert signins.valid(busy) or clock.now - 1000.0 > SESSION_MAX_S
    assert not signins.valid(idle)
    clock.now += SESSION_IDLE_S
    assert not signins.valid(busy)


def test_pending_codes_are_bounded() -> None:
    signins = SignIns(Clock())
    first = signins.new_code()
    for _ in range(MAX_PENDING):
        signins.new_code()
    assert signins.open_session(first) is None
