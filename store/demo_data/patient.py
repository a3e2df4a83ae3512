"""carol, a patient working with a health coach: training, a knee injury, food, sleep, medication."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..memory import MemoryStore

import random
from datetime import datetime, timedelta

from .weave import Fact, Persona, Planted, Topic, Turn, after_episode, weave

HEALTH = {
    "km": ("5", "6", "8", "10", "12", "15"),
    "pace": ("5:50", "6:05", "6:10", "6:25", "6:40"),
    "day": ("Tuesday", "Thursday", "Saturday", "Sunday"),
    "hours": ("5.5", "6", "6.5", "7", "7.5", "8"),
    "meal": ("oat porridge with berries", "a lentil salad", "rice with salmon", "a tofu stir-fry", "eggs on rye toast", "a bean chilli"),
    "exercise": ("glute bridges", "clamshells", "side planks", "single-leg squats", "calf raises"),
    "mood": ("tired", "energetic", "a bit low", "stressed about work", "calm"),
    "hr": ("52", "54", "55", "57", "60"),
    "sets": ("2", "3", "4"),
    "reps": ("8", "10", "12", "15"),
    "minutes": ("20", "30", "40", "45"),
}

TOPICS = [
    Topic(
        "training-{n}",
        (
            Turn("Ran {km} km today at {pace} per km.", "Nice steady effort; keep the next run easy.", "log_run", ("km", "pace")),
            Turn("What's on the plan for {day}?", "{day}: {km} km easy, then 10 minutes of {exercise}.", "plan_lookup", ("day",)),
            Turn(
                "My resting heart rate was {hr} this morning.",
                "{hr} is in your normal range; you're recovering well.",
                "log_vitals",
                ("hr",),
            ),
            Turn("Can I swap {day}'s {km} km for cycling?", "Yes, 45 minutes of easy cycling on {day} keeps the load without the impact."),
            Turn("How fast should my long run be?", "About 60-75 seconds per km slower than race pace: around {pace} is too fast for it."),
            Turn("Felt {mood} during the run.", "Noted. If that lasts more than a few days, we'll cut volume for a week."),
        ),
        HEALTH,
        ("day",),
    ),
    Topic(
        "knee-{n}",
        (
            Turn(
                "Did my {exercise} today, 3 sets.",
                "Good; add 2 reps per set next week if the knee stays quiet.",
                "log_exercise",
                ("exercise",),
            ),
            Turn(
                "The outside of my left knee aches after {km} km.",
                "Stop at the first twinge, ice it, and keep the next runs under {km} km.",
            ),
            Turn(
                "Should I foam roll before {exercise}?",
                "Yes, the outer thigh and glutes, 2 minutes a side, then {exercise}; never on the knee itself.",
            ),
            Turn(
                "Should I run on {day} if the knee is stiff?", "Walk 10 minutes first; if it stays stiff, do {exercise} instead of running."
            ),
        ),
        HEALTH,
        ("day",),
    ),
    Topic(
        "nutrition-{n}",
        (
            Turn("Had {meal} for lunch.", "Good balance of carbs and protein for a training day.", "log_meal", ("meal",)),
            Turn("What should I eat before a {km} km run?", "A banana and toast 90 minutes before; water, and a gel after 60 minutes."),
            Turn("Is {meal} a good dinner before a long run?", "Yes, eat it at least 3 hours before bed; add some extra rice."),
            Turn("I keep getting hungry after {meal}.", "Add a snack two hours later: lactose-free yoghurt or a handful of nuts."),
        ),
        HEALTH,
        ("day",),
    ),
    Topic(
        "sleep-{n}",
        (
            Turn(
                "Slept {hours} hours last night.", "Logged {hours} h; aim for 7.5 on nights before hard sessions.", "log_sleep", ("hours",)
            ),
            Turn(
                "Woke at 4 am after only {hours} hours.",
                "Keep the room cool and dark, no screens after waking; note if it follows late runs.",
            ),
            Turn("Felt {mood} today after {hours} hours of sleep.", "That fits: under 7 hours your mood and pace both dip."),
            Turn(
                "Had coffee after lunch and slept {hours} hours.",
                "Your sleep logs are shorter on days with coffee after 2 pm; try stopping at noon.",
            ),
        ),
        HEALTH,
        ("day",),
    ),
    Topic(
        "strength-{n}",
        (
            Turn(
                "Did {exercise}: {sets} sets of {reps}.",
                "Logged {sets}x{reps} {exercise}; keep the last reps slow and controlled.",
                "log_exercise",
                ("exercise", "sets", "reps"),
            ),
            Turn("{exercise} felt hard today at {reps} reps.", "Drop to {sets} sets of 8 for a week, then build back up."),
            Turn("Can I do {exercise} on a run day?", "Yes, after an easy {km} km, not before a long run."),
            Turn("Stretched for {minutes} minutes after {exercise}.", "Good habit; {minutes} minutes is plenty after strength work."),
            Turn("Yoga for {minutes} minutes instead of {exercise}?", "Fine on a rest day; keep {exercise} twice a week for the knee."),
        ),
        HEALTH,
        ("day",),
    ),
    Topic(
        "checkin-{n}",
        (
            Turn(
                "Weekly check-in: {km} km total, knee OK.",
                "Solid week. Next week: same volume, one session of strides.",
                "weekly_summary",
                ("km",),
            ),
            Turn("Felt {mood} this week.", "Thanks for telling me; we'll keep Sunday as a full rest day."),
            Turn("Average resting heart rate was {hr}.", "{hr} bpm average: aerobic fitness is trending the right way."),
        ),
        HEALTH,
        ("day",),
    ),
]

PLANTED = [
    Planted(
        58,
        "goals",
        "I want to run a half marathon in April.",
        "Great goal! A 16-week plan starting in December gets you there comfortably.",
        "goal",
    ),
    Planted(
        57,
        "goals",
        "I can train four days a week, mornings only.",
        "Plan: Tue/Thu easy runs, Sat long run, Sun mobility. All before 8 am.",
        "days",
    ),
    Planted(
        45,
        "nutrition-allergy",
        "Milk upsets my stomach, the doctor says I'm lactose intolerant.",
        "Noted: lactose intolerant. I'll suggest oat milk and lactose-free recovery shakes.",
        "lactose",
    ),
    # A paraphrase target: the demo guide's query (docs/demo.md) shares no word with it.
    Planted(
        40,
        "knee-physio",
        "My knee swells up whenever I go downstairs.",
        "That points to the IT band; ease off hills and stairs until the physio has looked at it.",
        "stairs",
    ),
    Planted(
        38,
        "knee-physio",
        "The physio says it's IT band syndrome.",
        "Recorded: IT band syndrome. Foam rolling and glute work, no downhill running for now.",
        "itb",
        {"name": "record_diagnosis", "arguments": {"condition": "IT band syndrome"}, "result": "saved"},
    ),
    Planted(
        35,
        "medication",
        "The GP put me on ibuprofen 400 mg twice a day for the knee.",
        "Logged: ibuprofen 400 mg twice daily, with food. Two weeks, then review.",
        "ibu400",
    ),
    Planted(21, "medication", "Ibuprofen is down to 200 mg, once a day.", "Updated: ibuprofen 200 mg once daily.", "ibu200"),
    Planted(10, "medication", "The GP says I can stop the ibuprofen.", "Stopped ibuprofen; tell me if the knee flares up again.", "ibu0"),
    # An exact appointment id among near misses.
    Planted(
        9,
        "appointments",
        "Confirm appointment APT-70522 with the physio on Monday.",
        "APT-70522 is confirmed for Monday at 8:30 with Dr. Silva.",
        "appointment",
        {"name": "booking_lookup", "arguments": {"ref": "APT-70522"}, "result": "confirmed"},
    ),
    Planted(8.9, "appointments", "Move APT-70252 to the afternoon.", "APT-70252 moved to 15:00 on Wednesday."),
    Planted(8.8, "appointments", "Cancel APT-75022, the sports massage.", "APT-75022 is cancelled; no fee this time."),
    Planted(8.7, "appointments", "What was APT-70523 about?", "APT-70523 was the blood test in October."),
    Planted(
        5,
        "checkin-race",
        "Ran 18 km today at 6:10 per km, no knee pain!",
        "Your longest run yet and pain-free: the plan is working.",
        "long",
    ),
]

FACTS = [
    Fact("carol", "goal", "half marathon in April", 58, "goal"),
    Fact("carol", "training_days", "Tue, Thu, Sat, Sun (mornings)", 57, "days"),
    Fact("carol", "diet", "lactose intolerant", 45, "lactose"),
    Fact("carol", "injury", "knee pain, cause unknown", 40, "stairs", confidence=0.6),
    Fact("carol", "injury", "IT band syndrome (left knee)", 38, "itb"),
    Fact("carol", "medication", "ibuprofen 400 mg twice daily", 35, "ibu400"),
    Fact("carol", "medication", "ibuprofen 200 mg once daily", 21, "ibu200"),
    Fact("carol", "medication", "none", 10, "ibu0"),
    Fact("carol", "longest_run", "15 km", 20),
    Fact("carol", "longest_run", "18 km", 5, "long"),
    Fact("carol", "physio", "Dr. Silva", 38, "itb"),
]

BLOCKS = [
    ("persona", "Encouraging health coach. Safety first; refers to a professional when in doubt."),
    ("human", "Carol, training for a half marathon in April; lactose intolerant; recovering from IT band syndrome."),
]


def working(store: MemoryStore, user_id: str | None, ids: dict[str, str]) -> None:
    """The 16-week plan mid-way, with a checkpoint before the knee made it change."""
    plan = store.session("training-plan", user_id=user_id)
    with after_episode(store, user_id, ids["stairs"], -timedelta(days=2)):  # week 4, two days before the knee
        plan.set("weekly_km", 32)
        plan.set("long_run_km", 15)
        plan.set_task_state("16-week half marathon plan", total_steps=16, current_step=4)
        plan.append_scratchpad("Long runs flat only until the physio clears downhill running.")
        plan.create_checkpoint("week 4, before the knee")
    with after_episode(store, user_id, ids["itb"], timedelta(hours=2)):  # the diagnosis changes the plan
        plan.set("weekly_km", 26)
        plan.set("long_run_km", 12)
        plan.update_task_progress(5, data={"adjusted_for": "IT band syndrome", "episode": ids["itb"]})
        plan.append_scratchpad("Back to 32 km a week once three runs in a row are pain-free.")
    with after_episode(store, user_id, ids["long"]):  # 18 km, pain-free
        plan.set("long_run_km", 18)
        plan.update_task_progress(9)
    visits = store.session("appointments", user_id=user_id)
    visits.set("next", {"ref": "APT-70522", "with": "Dr. Silva", "day": "Monday 8:30"})


def persona(rng: random.Random, now: datetime) -> Persona:
    episodes, keys = weave(rng, TOPICS, now=now, days=63, sessions=72, turns=(3, 5), planted=PLANTED, model="coach-3")
    return Persona("carol", episodes, keys, BLOCKS, FACTS, working)
