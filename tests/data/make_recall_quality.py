"""Build tests/data/recall_quality_hard.json, the hard recall-quality set (deterministic).

    python tests/data/make_recall_quality.py            # write the set
    python tests/data/make_recall_quality.py --check    # exit 1 if the committed set differs

Six tenants' memories as an assistant stores them (what the user said, the reply), in five
classes of queries, each reported separately by bench/recall_quality.py:

- paraphrase: the question shares few words with its answer, same-topic distractors share many;
- identifier: tickets, invoices, orders, e-mail addresses, versions and URLs, each beside
  near misses (transposed digits, one character off, a shared prefix);
- name: people and places, beside look-alike names in the same kind of memory;
- common_words: the words the question shares with its answer fill many unrelated memories;
- cross_tenant: near-copies of the answer, under the same episode id, in other tenants, which
  must never be returned.

The hand-written cases are in recall_quality_paraphrases.py and recall_quality_entities.py; this
file adds everyday conversations from hand-written templates (the background every tenant's
search runs against), the common-words cases, and checks the shape of what it writes.
"""

from __future__ import annotations

import json
import random
import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from recall_quality_entities import CROSS_TENANT, IDENTIFIERS, NAMES  # noqa: E402
from recall_quality_paraphrases import PARAPHRASES  # noqa: E402

OUT = HERE / "recall_quality_hard.json"
ABOUT = (
    "Memories an assistant stored for six users (what the user said, the reply) and questions about them, in five "
    "classes reported separately: paraphrase, identifier, name, common_words, cross_tenant. Each query names its "
    "tenant and the episode id it must find. Written by make_recall_quality.py; evaluated by bench/recall_quality.py."
)
TENANTS = ["dana", "marco", "leila", "sven", "aiko", "ruth"]
EVERYDAY_PER_TENANT = 200
START = datetime(2025, 9, 1, tzinfo=UTC)
SPAN_MINUTES = 211 * 24 * 60  # to the end of March 2026

# --- identifiers: memory and question templates per kind ------------------------------------

ID_MEMORIES = {
    "ticket": [
        ("{id}: {about}. Can you keep an eye on it?", "Watching {id}, I'll tell you when it changes."),
        ("Opened {id} because {about}.", "Thanks, I've linked {id} to this week's incident review."),
        ("Can you chase {id}? It's the one where {about}.", "Chased {id} with the owning team."),
        ("Reminder that {id} is still open: {about}.", "I'll bring {id} up at stand-up."),
    ],
    "invoice": [
        ("Filed invoice {id} from {who} for {what}, {amount}.", "Filed {id}, the total is {amount}."),
        ("Invoice {id} is {who}'s, for {what}: {amount}.", "Added {id} to the bookkeeping sheet."),
        ("Log {id}, that's {who} for {what}, {amount}.", "Logged {id}."),
        ("Check {id} against the delivery: {who}, {what}, {amount}.", "{id} matches the delivery note."),
    ],
    "order": [
        ("Order {id} ({about}) says delivered but nothing came.", "I've opened a missing-parcel claim for order {id}."),
        ("Can you track order {id}? It's {about}.", "Order {id} is out for delivery today."),
        ("Order {id} is {about}, please check it's been dispatched.", "{id} was dispatched yesterday."),
        ("Cancel order {id}, that's {about}.", "Cancelled {id}; the refund takes three to five days."),
    ],
    "email": [
        ("Send {about} to {id} please.", "Sent {about} to {id}."),
        ("Reply to {id} about {about}.", "Drafted a reply to {id}."),
        ("{id} asked for {about}, can you forward it?", "Forwarded to {id}."),
        ("Use {id} for anything about {about}.", "Noted {id} for {about}."),
    ],
    "version": [
        ("{id} {about}.", "Noted in the release log."),
        ("Heads up: {id} {about}.", "Thanks, added to the changelog notes."),
        ("Remember that {id} {about}.", "Noted."),
        ("FYI {id} {about}.", "Got it."),
    ],
    "url": [
        ("Save this link, it's {about}: {id}", "Saved."),
        ("{id} is {about}.", "Bookmarked."),
        ("Keep this one, {about}: {id}", "Added to your links."),
        ("Link for {about}: {id}", "Saved it."),
    ],
}
ID_QUESTIONS = {
    "ticket": ["What's {id} about?", "Which problem is ticket {id} tracking?", "Remind me what {id} was."],
    "invoice": ["What was invoice {id} for?", "Which company is on invoice {id}?", "How much was {id}?"],
    "order": ["What was in order {id}?", "Which order is {id}?", "What did I buy in order {id}?"],
    "email": ["What did I send to {id}?", "What was the email to {id} about?", "What did {id} need?"],
    "version": ["What's the deal with {id}?", "What do we know about {id}?", "Why does {id} matter?"],
    "url": ["What's at {id}?", "What is this link: {id}?"],
}

# --- common words: the answer's words fill many unrelated memories ---------------------------

COMMON_WORDS = {
    "dana": [
        (
            "What did I need to send before the Friday meeting?",
            (
                "Need to send the capacity numbers to Raj before the Friday meeting, he's presenting them.",
                "I'll remind you Thursday to send the numbers to Raj.",
            ),
        ),
        (
            "Who did I say I'd call back next week?",
            ("I told the Datadog rep I'd call back next week about the renewal.", "Added a task for next week: call the Datadog rep back."),
        ),
        (
            "Why am I working from home on Monday?",
            (
                "Working from home Monday, the boiler engineer is coming between 8 and 12.",
                "Posted in the team channel that you're home Monday morning.",
            ),
        ),
        (
            "What did I need to book time off for?",
            ("Remind me to book the time off for Noah's school play.", "Reminder set to book the time off."),
        ),
    ],
    "marco": [
        (
            "What did I need to call the landlord back about?",
            ("Call the landlord back tomorrow about the leak in the unit roof.", "I'll remind you tomorrow morning."),
        ),
        (
            "What do I need to send to the cafés next week?",
            ("Send the new price list to every café by the end of next week.", "Reminder set for Thursday next week."),
        ),
        (
            "Why am I not taking meetings on Monday mornings?",
            (
                "I can't do any meetings on Monday mornings, that's when the roast schedule runs.",
                "Blocked Monday mornings in your calendar.",
            ),
        ),
        (
            "What did I need to email the bank back about today?",
            ("Email the bank back today about the card reader fees.", "Drafted an email to the bank about the card reader fees."),
        ),
    ],
    "leila": [
        (
            "When is the meeting with the client next week?",
            ("The client meeting for the library moved to next Tuesday at 10.", "Updated your calendar: Tuesday 10:00."),
        ),
        (
            "What did I promise to send the contractor today?",
            ("Send the contractor the revised window schedule today.", "Sent the revised window schedule."),
        ),
        (
            "Who should I call back this afternoon?",
            ("Call back the planning office this afternoon, they had a question about the drawings.", "Reminder set for 2 pm."),
        ),
        (
            "Why am I working from home all week?",
            (
                "I'm working from home all week because the twins' school is closed for the strike.",
                "Let the team know you're remote all week.",
            ),
        ),
    ],
    "sven": [
        (
            "What did I need to check before the weekend?",
            ("Check the gutters before the weekend, the forecast says heavy rain.", "Reminder set for Friday afternoon."),
        ),
        (
            "Who is coming to the house on Monday morning?",
            ("The heat pump installer comes on Monday morning at 8.", "I'll remind you Sunday evening."),
        ),
        (
            "What do I need to book for next week?",
            ("Book the skip hire for next week, the old kitchen comes out on Tuesday.", "Booked a skip for Monday to Friday next week."),
        ),
        (
            "What did I want to email the bank about?",
            ("Email the bank about moving the loan payment date to the 25th.", "Drafted the email to the bank."),
        ),
    ],
    "aiko": [
        (
            "What time is my meeting with my supervisor this week?",
            ("Supervision meeting is Thursday at 2 this week, not the usual Wednesday.", "Moved it in your calendar."),
        ),
        (
            "What do I need to send back by Friday?",
            ("Send back the signed tutoring contract by Friday or I won't get paid.", "Reminder set for Thursday evening."),
        ),
        (
            "Who did I need to email back today?",
            ("Email back the game studio today, they want to know if I can take the next batch.", "Drafted a reply to the studio."),
        ),
        ("Why am I not working tomorrow morning?", ("No work tomorrow morning, I'm at the dentist at 9:30.", "Blocked your morning.")),
    ],
    "ruth": [
        (
            "When is my appointment with the nurse next week?",
            ("The nurse wants to see me next week, Wednesday at 11:20, for my blood test.", "Added it to your diary with a reminder."),
        ),
        (
            "Who did I say I'd call back tonight?",
            ("Tell Doreen I'll call her back tonight after Coronation Street.", "I'll remind you at 8."),
        ),
        (
            "What do I need to bring to church on Sunday?",
            ("Need to bring two dozen scones to church on Sunday for the coffee morning.", "I'll remind you Saturday to bake."),
        ),
        (
            "What did I need to send Claire today?",
            ("Need to send Claire the photos from Jack's birthday today, she missed it.", "Sent the photos to Claire."),
        ),
    ],
}


# --- assembly -------------------------------------------------------------------------------

from recall_quality_everyday import COMMON, TEMPLATES, TENANT_VOCAB  # noqa: E402

_SLOT = re.compile(r"{(\w+)}")
# Slots filled together from one tuple of COMMON, so that a value and its partner agree.
_PAIRED = {
    "weather": ("forecast", 0),
    "temp": ("forecast", 1),
    "shop": ("errand", 0),
    "item": ("errand", 1),
    "qty": ("unit_pair", 0),
    "unit": ("unit_pair", 1),
    "unit2": ("unit_pair", 2),
    "conv": ("unit_pair", 3),
    "podtopic": ("pod", 0),
    "podcast": ("pod", 1),
    "article": ("article", 0),
    "summary": ("article", 1),
}


def everyday(tenant: str, rng: random.Random, count: int) -> list[tuple[str, str]]:
    vocab = {**COMMON, **TENANT_VOCAB[tenant]}
    seen: set[tuple[str, str]] = set()
    out = []
    while len(out) < count:
        template = rng.choice(TEMPLATES)
        values: dict[str, str] = {}
        tuples: dict[str, tuple] = {}
        for slot in _SLOT.findall(template[0] + template[1]):
            if slot in values:
                continue
            if slot in _PAIRED:
                source, index = _PAIRED[slot]
                tuples.setdefault(source, rng.choice(vocab[source]))
                values[slot] = tuples[source][index]
            elif slot not in vocab and slot[-1] == "2" and slot[:-1] in vocab:  # a second, different value (place2, grocery2)
                values[slot] = rng.choice([v for v in vocab[slot[:-1]] if v != values.get(slot[:-1])])
            else:
                values[slot] = rng.choice(vocab[slot])
        pair = (template[0].format(**values), template[1].format(**values))
        if pair not in seen:
            seen.add(pair)
            out.append(pair)
    return out


class Builder:
    def __init__(self, seed: int = 13):
        self.rng = random.Random(seed)
        self.memories: list[dict] = []
        self.queries: list[dict] = []

    def memory(self, tenant: str, mid: str, text: tuple[str, str]) -> str:
        when = START + timedelta(minutes=self.rng.randrange(SPAN_MINUTES))
        self.memories.append(
            {"tenant": tenant, "id": mid, "input": text[0], "output": text[1], "occurred_at": when.strftime("%Y-%m-%dT%H:%M:%SZ")}
        )
        return mid

    def query(self, cls: str, tenant: str, q: str, expected: str, **extra) -> None:
        number = sum(1 for x in self.queries if x["class"] == cls) + 1
        self.queries.append({"id": f"{cls}-{number:03d}", "class": cls, "tenant": tenant, "q": q, "expected": [expected], **extra})

    def paraphrases(self) -> None:
        for tenant, cases in PARAPHRASES.items():
            for n, (question, answer, distractors) in enumerate(cases, start=1):
                target = self.memory(tenant, f"{tenant}-para-{n:02d}-answer", answer)
                others = [self.memory(tenant, f"{tenant}-para-{n:02d}-distractor-{i}", d) for i, d in enumerate(distractors, start=1)]
                self.query("paraphrase", tenant, question, target, distractors=others)

    def identifiers(self) -> None:
        for n, (kind, tenant, ids, abouts, asked) in enumerate(IDENTIFIERS, start=1):
            group = []
            for i, (ident, about) in enumerate(zip(ids, abouts, strict=True)):
                slots = {
                    "id": ident,
                    **(dict(zip(("who", "what", "amount"), about, strict=True)) if isinstance(about, tuple) else {"about": about}),
                }
                template = ID_MEMORIES[kind][i % len(ID_MEMORIES[kind])]
                group.append(
                    self.memory(tenant, f"{tenant}-{kind}-{n:02d}-{i + 1}", (template[0].format(**slots), template[1].format(**slots)))
                )
            for i in asked:
                question = self.rng.choice(ID_QUESTIONS[kind]).format(id=ids[i])
                self.query(
                    "identifier",
                    tenant,
                    question,
                    group[i],
                    kind=kind,
                    identifier=ids[i],
                    near_misses=[m for j, m in enumerate(group) if j != i],
                    near_miss_identifiers=[x for j, x in enumerate(ids) if j != i],
                )

    def names(self) -> None:
        for n, (tenant, template, question, variants, asked) in enumerate(NAMES, start=1):
            group = [
                self.memory(
                    tenant,
                    f"{tenant}-name-{n:02d}-{i + 1}",
                    (template[0].format(name=name, detail=detail), template[1].format(name=name, detail=detail)),
                )
                for i, (name, detail) in enumerate(variants)
            ]
            for i in asked:
                self.query(
                    "name",
                    tenant,
                    question.format(name=variants[i][0]),
                    group[i],
                    name=variants[i][0],
                    distractors=[m for j, m in enumerate(group) if j != i],
                )

    def common_words(self) -> None:
        for tenant, cases in COMMON_WORDS.items():
            for n, (question, answer) in enumerate(cases, start=1):
                self.query("common_words", tenant, question, self.memory(tenant, f"{tenant}-common-{n:02d}", answer))

    def cross_tenant(self) -> None:
        for n, (question, template, values) in enumerate(CROSS_TENANT, start=1):
            (owner, slots), *copies = values.items()
            mid = f"shared-{n:02d}"  # the same id in every tenant: a leak would look like a hit by id alone
            self.memory(owner, mid, (template[0].format(**slots), template[1].format(**slots)))
            for tenant, other in copies:
                self.memory(tenant, mid, (template[0].format(**other), template[1].format(**other)))
            self.query("cross_tenant", owner, question, mid, copies_in=[t for t, _ in copies])

    def background(self) -> None:
        for tenant in TENANTS:
            for n, pair in enumerate(everyday(tenant, self.rng, EVERYDAY_PER_TENANT), start=1):
                self.memory(tenant, f"{tenant}-chat-{n:03d}", pair)


def build() -> dict:
    b = Builder()
    b.paraphrases()
    b.identifiers()
    b.names()
    b.common_words()
    b.cross_tenant()
    b.background()
    b.rng.shuffle(b.memories)  # insertion order says nothing about which memory is the answer
    return {
        "about": ABOUT,
        "generator": "tests/data/make_recall_quality.py",
        "tenants": TENANTS,
        "memories": b.memories,
        "queries": b.queries,
    }


def render(data: dict) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"


if __name__ == "__main__":
    text = render(build())
    if "--check" in sys.argv[1:]:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{OUT.name} differs from what the generator writes; run it without --check")
        sys.exit(0 if same else 1)
    OUT.write_text(text, encoding="utf-8")
    data = json.loads(text)
    print(f"wrote {OUT.name}: {len(data['memories'])} memories, {len(data['queries'])} queries")
