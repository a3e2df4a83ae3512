"""The anonymous bucket: a public kiosk that answers strangers' questions, no user id."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..memory import MemoryStore

import random
from datetime import datetime, timedelta

from .weave import Persona, Topic, Turn, weave

KIOSK = {
    "city": ("Canberra", "Ottawa", "Wellington", "Bern", "Brasília"),
    "country": ("Australia", "Canada", "New Zealand", "Switzerland", "Brazil"),
    "word": ("thank you", "good morning", "where is the station", "how much is this"),
    "language": ("Japanese", "Portuguese", "Finnish", "Greek"),
}

TOPICS = [
    Topic(
        "kiosk-{n}",
        (
            Turn("What's the capital of {country}?", "Its capital is {city}."),
            Turn(
                "Translate '{word}' into {language}.",
                "Here is '{word}' in {language}, with how to pronounce it.",
                "translate",
                ("word", "language"),
            ),
            Turn("How many tablespoons in a cup?", "Sixteen US tablespoons make one cup."),
            Turn("When does the museum close today?", "At 6 pm; the last entry is at 5:15.", "opening_hours", ()),
            Turn("Where is the nearest pharmacy?", "Two blocks north, on the corner by the bakery; open until 9 pm."),
        ),
        KIOSK,
    ),
]


def working(store: MemoryStore, user_id: str | None, ids: dict[str, str]) -> None:
    store.session("kiosk-1", user_id=user_id).set("language", "en", ttl=timedelta(minutes=30))


def persona(rng: random.Random, now: datetime) -> Persona:
    episodes, keys = weave(rng, TOPICS, now=now, days=6, sessions=8, turns=(2, 4), planted=[], model="kiosk-1")
    return Persona(None, episodes, keys, working=working)
