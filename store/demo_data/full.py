"""The full demo `memlens demo` builds: three personas with a few hundred episodes each over
weeks of sessions, facts that change over time, working blocks, sessions mid-task, exact
identifiers among near misses and near-duplicate memories, plus the anonymous bucket.

Ingested with the batch APIs: one ``remember_many`` per tenant, so each tenant's episodes are
embedded in one batch and written in one transaction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..memory import MemoryStore

import random
from datetime import datetime, timedelta

from ..validation import clock_fixed_at
from . import developer, kiosk, patient, traveller

SEED = 20261120
LEARNED_AFTER = timedelta(hours=1)  # how long after a fact became true the agent wrote it down
# Least interesting first: the inspector lists the most recently active tenant first.
PERSONAS = (kiosk, patient, developer, traveller)


def fill(store: MemoryStore, now: datetime, seed: int = SEED) -> None:
    """Write the full demo into an empty ``store``; the same ``seed`` and ``now`` give the same content."""
    rng = random.Random(seed)
    for module in PERSONAS:
        who = module.persona(rng, now)
        written = store.remember_many(who.episodes, user_id=who.user_id)
        ids = {key: written[index].id for key, index in who.keys.items()}
        # The tenant's history, written when it happened, so the inspector's timeline has it:
        # earlier versions of its blocks, and each fact learned an hour after it became true.
        for days_ago, name, content in sorted(who.earlier_blocks, key=lambda b: -b[0]):
            with clock_fixed_at(now - timedelta(days=days_ago)):
                store.update_block(name, content, user_id=who.user_id)
        for fact in sorted(who.facts, key=lambda f: -f.days_ago):  # oldest first: each supersedes the last
            since = timedelta(days=fact.days_ago)
            with clock_fixed_at(now - since + min(LEARNED_AFTER, since / 2)):
                store.add_fact(
                    fact.subject,
                    fact.predicate,
                    fact.object,
                    user_id=who.user_id,
                    confidence=fact.confidence,
                    valid_from=now - timedelta(days=fact.days_ago),
                    source_episode_ids=[ids[fact.source]] if fact.source else [],
                )
        for name, content in who.blocks:  # the current versions, at the build's own time
            store.update_block(name, content, user_id=who.user_id)
        if who.working is not None:
            who.working(store, who.user_id, ids)
