"""The compact demo: three users and the anonymous bucket, every tier filled, 37 episodes.

The inspector's tests and snapshot baselines are built on exactly this content: change it and
every baseline changes with it. The richer demo `memlens demo` builds is in :mod:`.full`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..memory import MemoryStore

from datetime import datetime, timedelta
from typing import Any

from ..validation import clock_fixed_at
from .developer import async_refactor

_ALICE_TURNS = [
    (
        "I'm planning a trip to Lisbon in March, can you help?",
        "Of course! March is mild in Lisbon, around 17°C. How many days?",
        "trip-lisbon",
    ),
    (
        "Five days. I'm vegetarian, so food tips matter.",
        "Noted: vegetarian. Try Ao 26 Vegan Food Project and the markets at Time Out.",
        "trip-lisbon",
    ),
    (
        "Book me a hotel near Alfama under 150 euros a night.",
        "I found Memmo Alfama at 142 €/night with a river view. Shall I hold it?",
        "trip-lisbon",
    ),
    (
        "Yes, hold it. Also I'm allergic to cats, avoid pet-friendly rooms.",
        "Held the room and asked for a pet-free floor because of your cat allergy.",
        "trip-lisbon",
    ),
    (
        "What's the best way from the airport to Alfama?",
        "Take the red metro line to Alameda, then the green line to Baixa-Chiado; a taxi is about 15 €.",
        "trip-lisbon",
    ),
    ("Remind me to buy a Viva Viagem card.", "Reminder set: buy a Viva Viagem card at the airport metro station.", "trip-lisbon"),
    ("My sister Maria might join for two days.", "Great, I'll look for a twin room option for the nights Maria is there.", "trip-lisbon"),
    (
        "Actually I moved to Porto last month, so I'll take the train instead.",
        "Got it, you live in Porto now. The Alfa Pendular takes under 3 hours to Lisbon.",
        "trip-lisbon",
    ),
    (
        "Can you suggest day trips from Lisbon?",
        "Sintra for the palaces, Cascais for the beach, and Évora for Roman ruins.",
        "trip-day-trips",
    ),
    (
        "Which one is best for someone who hates crowds?",
        "Évora: quieter than Sintra, and the Chapel of Bones is worth the visit.",
        "trip-day-trips",
    ),
    ("Do I need to book Pena Palace tickets in advance?", "Yes, book online; timed entries sell out in spring.", "trip-day-trips"),
    (
        "What should I pack for Lisbon in March?",
        "Layers, a light rain jacket and comfortable shoes: the hills are steep and cobbled.",
        "trip-packing",
    ),
    ("Is my passport enough or do I need a visa?", "As an EU resident you only need your ID card or passport.", "trip-packing"),
    (
        "Set my budget for the whole trip to 1200 euros.",
        "Budget set to 1200 €; hotel so far is 710 €, leaving 490 € for food and trips.",
        "trip-budget",
    ),
    ("How much have I committed so far?", "710 € for the hotel and 24 € for the train: 734 € of 1200 €.", "trip-budget"),
]

_BOB_TURNS = [
    (
        "Why does my pytest fixture run twice?",
        "It's function-scoped and used by two tests; set scope='module' if the state can be shared.",
        "debug-pytest",
    ),
    (
        "Now the database isn't cleaned between tests.",
        "Use a transaction per test and roll it back in the fixture's teardown.",
        "debug-pytest",
    ),
    (
        "How do I make SQLite faster for inserts?",
        "Batch rows in one transaction, use executemany, and set journal_mode=WAL.",
        "perf-sqlite",
    ),
    (
        "I get 'database is locked' with two processes.",
        "Enable WAL, set busy_timeout, and start writes with BEGIN IMMEDIATE.",
        "perf-sqlite",
    ),
    ("Our service uses Python 3.11 and FastAPI.", "Noted: Python 3.11 with FastAPI. I'll keep suggestions compatible.", "onboarding"),
    ("We deploy on Kubernetes with Helm charts.", "Good to know: Kubernetes and Helm. I can help with chart values too.", "onboarding"),
    (
        "Refactor this function to be async.",
        "Replaced requests with httpx.AsyncClient and awaited the calls; tests pass.",
        "refactor-async",
    ),
    ("The async version leaks connections.", "Create the AsyncClient once in the app lifespan and close it on shutdown.", "refactor-async"),
    (
        "We switched from FastAPI to Litestar this sprint.",
        "Understood, your service now runs on Litestar; I'll adapt the examples.",
        "refactor-async",
    ),
    ("How do I profile a slow endpoint?", "Run py-spy record against the worker, then look at the flame graph.", "perf-profiling"),
    (
        "The flame graph shows JSON serialization dominating.",
        "Switch to orjson and return bytes directly from the handler.",
        "perf-profiling",
    ),
    (
        "Write a migration that adds an index on orders.created_at.",
        "Added migration 0042 creating ix_orders_created_at concurrently.",
        "db-migrations",
    ),
]

_CAROL_TURNS = [
    ("I want to run a half marathon in April.", "Great goal! A 16-week plan starting in December gets you there comfortably.", "training"),
    ("I can train four days a week, mornings only.", "Plan: Tue/Thu easy runs, Sat long run, Sun mobility. All before 8 am.", "training"),
    (
        "My left knee hurts after long runs.",
        "Cut the long run by 20% this week and add hip strengthening; see a physio if it persists.",
        "injury",
    ),
    (
        "The physio says it's IT band syndrome.",
        "Recorded: IT band syndrome. Foam rolling and glute work, and no downhill running for now.",
        "injury",
    ),
    ("What should I eat before a long run?", "A banana and toast 90 minutes before; water, and a gel after 60 minutes.", "nutrition"),
    ("I'm lactose intolerant.", "Noted: lactose intolerant. I'll suggest oat milk and lactose-free recovery shakes.", "nutrition"),
    ("Ran 15 km today at 6:10 per km!", "Excellent, that's your longest run yet and right on target pace.", "training"),
]

_ANONYMOUS_TURNS = [
    ("What's the capital of Australia?", "Canberra.", "kiosk-1"),
    ("How many tablespoons in a cup?", "Sixteen US tablespoons make one cup.", "kiosk-1"),
    ("Translate 'thank you' into Japanese.", "Arigatou gozaimasu (ありがとうございます).", "kiosk-2"),
]


def _episodes(turns: list[tuple[str, str, str]], start: datetime, step: timedelta) -> list[dict[str, Any]]:
    items = []
    for index, (user_text, agent_text, session) in enumerate(turns):
        tools = []
        if "book" in user_text.lower() or "hold" in user_text.lower():
            tools = [{"name": "hotel_search", "arguments": {"city": "Lisbon", "max_price": 150}, "result": "3 hotels"}]
        items.append(
            {
                "input": user_text,
                "output": agent_text,
                "session_id": session,
                "occurred_at": start + index * step,
                "tool_calls": tools,
                "metadata": {"model": "gpt-demo", "turn": index + 1},
            }
        )
    return items


def fill(store: MemoryStore, now: datetime) -> None:
    """Write the compact demo into an empty ``store``, its clock at ``now``."""
    day = timedelta(days=1)

    # Written least interesting first: the inspector lists the most recently active tenant first.
    store.remember_many(_episodes(_ANONYMOUS_TURNS, now - 2 * day, timedelta(minutes=7)), user_id=None)
    kiosk = store.session("kiosk-1", user_id=None)
    kiosk.set("language", "en", ttl=timedelta(minutes=30))
    store.remember_many(_episodes(_CAROL_TURNS, now - 30 * day, timedelta(days=2)), user_id="carol")
    store.update_block("persona", "Encouraging running coach. Safety first.", user_id="carol")
    store.add_fact("carol", "goal", "half marathon in April", user_id="carol", valid_from=now - 30 * day)
    store.add_fact("carol", "injury", "IT band syndrome (left knee)", user_id="carol", valid_from=now - 24 * day)
    store.add_fact("carol", "diet", "lactose intolerant", user_id="carol", valid_from=now - 22 * day)
    coach = store.session("training", user_id="carol")
    coach.set("weekly_km", 32)
    coach.set("long_run_km", 15)
    coach.set_task_state("16-week half marathon plan", total_steps=16, current_step=5)

    bob = store.remember_many(_episodes(_BOB_TURNS, now - 10 * day, timedelta(hours=6)), user_id="bob")
    store.update_block("persona", "Senior Python engineer pairing with Bob. Shows code, explains trade-offs.", user_id="bob")
    store.update_block("project", "Orders service: Python 3.11, Litestar, PostgreSQL, deployed on Kubernetes via Helm.", user_id="bob")
    store.add_fact("orders-service", "framework", "FastAPI", user_id="bob", valid_from=now - 9 * day, source_episode_ids=[bob[4].id])
    store.add_fact("orders-service", "framework", "Litestar", user_id="bob", valid_from=now - 8 * day, source_episode_ids=[bob[8].id])
    store.add_fact("orders-service", "python_version", "3.11", user_id="bob", valid_from=now - 9 * day)
    store.add_fact(
        "orders-service", "deploys_on", "Kubernetes (Helm)", user_id="bob", valid_from=now - 9 * day, source_episode_ids=[bob[5].id]
    )
    async_refactor(store, "bob")

    alice = store.remember_many(_episodes(_ALICE_TURNS, now - 20 * day, timedelta(hours=9)), user_id="alice")
    # Alice's history is written when it happened (the timeline steps through it): what the agent
    # learned on each day, and the blocks as it rewrote them.
    hour = timedelta(hours=1)
    with clock_fixed_at(now - 20 * day + hour):
        store.update_block("persona", "Friendly travel planner. Concise, practical.", user_id="alice")
        store.update_block("human", "Alice, lives in Lisbon, vegetarian.", user_id="alice")
        store.update_block("goals", "Plan a 5-day Lisbon trip in March.", user_id="alice")
        store.add_fact("alice", "lives_in", "Lisbon", user_id="alice", valid_from=now - 400 * day, source_episode_ids=[alice[0].id])
        store.add_fact("alice", "diet", "vegetarian", user_id="alice", valid_from=now - 20 * day, source_episode_ids=[alice[1].id])
    with clock_fixed_at(now - 19 * day + hour):
        store.update_block("human", "Alice, lives in Lisbon, vegetarian, allergic to cats.", user_id="alice")
        store.add_fact(
            "alice", "allergy", "cats", user_id="alice", confidence=0.9, valid_from=now - 19 * day, source_episode_ids=[alice[3].id]
        )
    with clock_fixed_at(now - 18 * day + hour):
        store.update_block("goals", "Plan a 5-day Lisbon trip in March within 1000 €.", user_id="alice")
        store.add_fact("alice", "trip_budget", "1000 EUR", user_id="alice", valid_from=now - 18 * day)
    with clock_fixed_at(now - 17 * day + hour):
        store.update_block("human", "Alice, lives in Porto, vegetarian, allergic to cats.", user_id="alice")
        store.add_fact("alice", "lives_in", "Porto", user_id="alice", valid_from=now - 17 * day, source_episode_ids=[alice[7].id])
    with clock_fixed_at(now - 15 * day + hour):
        store.update_block("goals", "Plan a 5-day Lisbon trip in March within 1200 €.", user_id="alice")
        store.add_fact("alice", "trip_budget", "1200 EUR", user_id="alice", valid_from=now - 15 * day, source_episode_ids=[alice[13].id])
    store.update_block("persona", "Friendly travel planner. Concise, practical, mentions prices in euros.", user_id="alice")
    store.update_block(
        "human", "Alice, lives in Porto, vegetarian, allergic to cats, travels with her sister Maria sometimes.", user_id="alice"
    )
    trip = store.session("trip-lisbon", user_id="alice")
    trip.set("destination", "Lisbon")
    trip.set("dates", {"from": "2027-03-12", "to": "2027-03-17"})
    trip.set("hotel_hold", {"name": "Memmo Alfama", "price_eur": 142}, ttl=timedelta(hours=48))
    trip.set_task_state("Book the Lisbon trip", total_steps=5, data={"booked": ["hotel"]})
    trip.update_task_progress(2)
    trip.append_scratchpad("User prefers quiet places; avoid Sintra at weekends.")
    trip.append_scratchpad("Hotel hold expires in 48 h; confirm before then.")
    first = trip.create_checkpoint("after hotel hold")
    trip.set("transport", "Alfa Pendular train from Porto")
    trip.update_task_progress(3, data={"booked": ["hotel", "train"]})
    trip.append_scratchpad("Moved to Porto: plan around the train, not a flight.")
    trip.create_checkpoint("after train booked")
    del first
