from tap.near_duplicate import repeats

PARAGRAPH = (
    "The nightly backup copied the photo library to the NAS and checked every file against its hash. "
    "Two files were skipped because they were open in the editor at the time. "
    "The next run starts at two in the morning and takes about forty minutes."
)


def test_a_passage_said_again_repeats() -> None:
    assert repeats("User: " + PARAGRAPH, "User: " + PARAGRAPH)
    assert repeats("User: " + PARAGRAPH, "User: Here is the log: " + PARAGRAPH)  # a paste's body, its first passage


def test_a_word_of_its_own_is_news() -> None:
    assert not repeats("User: Here is the log: " + PARAGRAPH, "User: " + PARAGRAPH)
    assert not repeats(PARAGRAPH.replace("Two files", "Three files"), PARAGRAPH)
    assert not repeats(PARAGRAPH + " Order 4412.", PARAGRAPH + " Order 4411.")


def test_a_short_sentence_is_not_a_copy_of_a_longer_one() -> None:
    assert not repeats("User: What should I feed my dog?", "User: What should I feed my dog in the morning?")
    assert not repeats("User: I love my new bike", "User: I love my bike")
