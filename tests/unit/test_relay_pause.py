"""A following relay's wait between looks at the store: soon while commands come, backing off when idle."""
from infra.relay import QUICK_POLL_SECONDS, QUICK_WINDOW_SECONDS, next_pause


def test_given_events_just_published_when_pausing_then_the_relay_looks_again_soon():
    assert next_pause(0.2, published=5, idle_seconds=0.0, poll_seconds=0.2) == QUICK_POLL_SECONDS


def test_given_a_short_gap_between_commands_when_a_look_is_empty_then_the_relay_still_looks_soon():
    pause = QUICK_POLL_SECONDS
    for _ in range(5):  # five empty looks inside the window: no back-off yet
        pause = next_pause(pause, published=0, idle_seconds=QUICK_WINDOW_SECONDS / 2, poll_seconds=0.2)
    assert pause == QUICK_POLL_SECONDS


def test_given_an_idle_relay_when_looks_stay_empty_then_it_backs_off_to_the_follow_poll():
    pauses, pause = [], QUICK_POLL_SECONDS
    for _ in range(8):
        pause = next_pause(pause, published=0, idle_seconds=QUICK_WINDOW_SECONDS + 1, poll_seconds=0.2)
        pauses.append(pause)
    assert pauses[:3] == [0.01, 0.02, 0.04]
    assert pauses[-1] == 0.2 and max(pauses) == 0.2
