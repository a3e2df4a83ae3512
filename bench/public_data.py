"""Public retrieval sets for bench/public_recall.py, read from clones of the repositories that
publish them. None of them was written in this project; none is LoCoMo (kept as an independent check).

Each set comes from a public GitHub repository, cloned once into the sources folder (default
``bench/.cache/public/sources``; a bare mirror works as well as a checkout):

    git clone --depth 1 https://github.com/hussainzs/Memoria                        hussainzs+Memoria
    git clone --depth 1 https://github.com/Shakiba-Alipour/Information-Retrieval-on-CISI \
        Shakiba-Alipour+Information-Retrieval-on-CISI
    git clone --depth 1 https://github.com/noramtboraas/information-retrieval        noramtboraas+information-retrieval

- **longmemeval**: LongMemEval_S (Wu et al., ICLR 2025; MIT licence, (c) 2024 Di Wu, whose text
  the Memoria repository keeps as ``evaluations/LICENSE``), one JSON file per question. Each
  question is a tenant holding its own chat history (about 50 sessions, 500 turns; a turn is an
  episode, user turns as input and assistant turns as output, dated by its session); its
  evidence is the turns marked ``has_answer``; its class is the question type. Abstention
  questions (no evidence) are left out; a fixed sample of each type is taken (``per_class``).
- **cisi** and **cranfield**: the CISI (1,460 library-science abstracts, 76 queries with
  judgements) and Cranfield (1,400 aerodynamics abstracts, 225 queries) test collections, as
  distributed by the University of Glasgow's IR group for research use. One tenant each, a
  document an episode (title as input, abstract as output); a query's evidence is its judged
  relevant documents (Cranfield: grades 1-4; grade -1 means "not relevant"). The classes split
  queries by length: ``short`` (at most 12 words) and ``long``.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

SOURCES_DIR = Path(__file__).resolve().parent / ".cache" / "public" / "sources"

REPOSITORIES = {
    "longmemeval": "hussainzs/Memoria",
    "cisi": "Shakiba-Alipour/Information-Retrieval-on-CISI",
    "cranfield": "noramtboraas/information-retrieval",
}
LICENCES = {
    "longmemeval": "MIT (LongMemEval, (c) 2024 Di Wu)",
    "cisi": "Glasgow IR test collection, research use",
    "cranfield": "Glasgow IR test collection, research use",
}


@dataclass(frozen=True)
class Memory:
    id: str
    tenant: str
    input: str
    output: str
    session_id: str | None
    occurred_at: datetime

    @property
    def text(self) -> str:
        return f"{self.input}\n{self.output}".strip()  # what the store searches (episodes.embed_text)


@dataclass(frozen=True)
class Question:
    id: str
    tenant: str
    text: str
    cls: str
    relevant: frozenset[str]


@dataclass(frozen=True)
class PublicSet:
    name: str
    repository: str
    licence: str
    memories: list[Memory]
    questions: list[Question]


class Source:
    """One cloned repository: its files read from the checkout, or from the git objects of a bare mirror."""

    def __init__(self, name: str, sources: Path):
        repo = REPOSITORIES[name]
        folder = repo.replace("/", "+")
        found = [p for p in (sources / folder, sources / folder / "repo", sources / repo.split("/")[1]) if p.exists()]
        if not found:
            raise SystemExit(
                f"{name}: no clone of {repo} in {sources}; run\n    git clone --depth 1 https://github.com/{repo} {sources / folder}"
            )
        self.path = found[0]
        self.bare = not (self.path / ".git").exists() and (self.path / "HEAD").exists()

    def _git(self, *args: str) -> str:
        where = ["--git-dir", str(self.path)] if self.bare else ["-C", str(self.path)]
        return subprocess.run(["git", *where, *args], capture_output=True, text=True, check=True).stdout

    def read(self, path: str) -> str:
        if not self.bare and (self.path / path).exists():
            return (self.path / path).read_text(encoding="utf-8", errors="replace")
        return self._git("show", f"HEAD:{path}")

    def listing(self, folder: str) -> list[str]:
        if not self.bare and (self.path / folder).is_dir():
            return sorted(f"{folder}/{p.name}" for p in (self.path / folder).iterdir())
        return [f"{folder}/{n}" for n in sorted(self._git("ls-tree", "--name-only", f"HEAD:{folder}").split())]


def missing_sources(sources: Path = SOURCES_DIR) -> list[str]:
    """The repositories of the public sets not cloned in ``sources``."""
    missing = []
    for name, repo in REPOSITORIES.items():
        try:
            Source(name, sources)
        except SystemExit:
            missing.append(repo)
    return missing


def _stable_order(key: str) -> str:
    return hashlib.sha1(key.encode()).hexdigest()


def longmemeval(sources: Path, per_class: int = 10) -> PublicSet:
    source = Source("longmemeval", sources)
    folder = "evaluations/data/lme_jsons"
    # <number of sessions>_<question id>.json: the S set holds about 50 sessions a question
    # (the oracle files hold 1-6, the M files about 500).
    files = [f for f in source.listing(folder) if f.endswith(".json") and 30 <= int(f.rsplit("/", 1)[1].split("_")[0]) < 100]
    chosen: dict[str, list[dict]] = defaultdict(list)
    for f in sorted(files, key=_stable_order):
        item = json.loads(source.read(f))
        cls = item["question_type"]
        if item["question_id"].endswith("_abs") or len(chosen[cls]) >= per_class:
            continue
        if not any(t.get("has_answer") for s in item["haystack_sessions"] for t in s):
            continue  # evidence given by session only
        chosen[cls].append(item)
    memories, questions = [], []
    for cls in sorted(chosen):
        for item in chosen[cls]:
            tenant = f"lme-{item['question_id']}"
            relevant = set()
            sessions = zip(item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"], strict=True)
            for position, (sid, date, session) in enumerate(sessions):
                start = datetime.strptime(date.split(" (")[0] + date.split(")")[1], "%Y/%m/%d %H:%M").replace(tzinfo=UTC)
                for i, turn in enumerate(session):
                    if not turn["content"].strip():
                        continue  # a few turns are empty
                    mid = f"{position}:{sid}:{i}"  # a haystack may hold a session twice
                    user = turn["role"] == "user"
                    memories.append(
                        Memory(
                            mid,
                            tenant,
                            turn["content"] if user else "",
                            "" if user else turn["content"],
                            sid,
                            start + timedelta(seconds=30 * i),
                        )
                    )
                    if turn.get("has_answer"):
                        relevant.add(mid)
            questions.append(Question(item["question_id"], tenant, item["question"], cls, frozenset(relevant)))
    return PublicSet("longmemeval", REPOSITORIES["longmemeval"], LICENCES["longmemeval"], memories, questions)


def _fields(text: str) -> Iterator[tuple[int, dict[str, str]]]:
    """The SMART format of the Glasgow collections: ``.I n`` opens a record, ``.T``/``.W``/... a field."""
    for record in re.split(r"^\.I\s+", text, flags=re.M)[1:]:
        number, _, body = record.partition("\n")
        fields: dict[str, str] = {}
        for part in re.split(r"^\.(?=[A-Z]\s*$)", body, flags=re.M):
            tag, _, value = part.partition("\n")
            if tag.strip():
                fields[tag.strip()] = " ".join(value.split())
        yield int(number.strip()), fields


def _collection(name: str, memories_text: str, queries_text: str, judged: dict[int, set[int]]) -> PublicSet:
    base = datetime(2020, 1, 1, tzinfo=UTC)
    memories = [
        Memory(str(n), name, f.get("T", ""), f.get("W", ""), None, base + timedelta(minutes=n))
        for n, f in _fields(memories_text)
        if f.get("T") or f.get("W")  # two of Cranfield's records are empty
    ]
    questions = []
    # Queries are numbered in file order by the judgements (Cranfield's .I numbers skip).
    for position, (_, f) in enumerate(_fields(queries_text), start=1):
        relevant = judged.get(position)
        text = f.get("W", "")
        if relevant and text:
            cls = "short" if len(text.split()) <= 12 else "long"
            questions.append(Question(f"{name}-{position}", name, text, cls, frozenset(map(str, relevant))))
    return PublicSet(name, REPOSITORIES[name], LICENCES[name], memories, questions)


def cisi(sources: Path) -> PublicSet:
    source = Source("cisi", sources)
    judged: dict[int, set[int]] = defaultdict(set)
    for line in source.read("CISI.REL").splitlines():
        if line.split():
            q, d = line.split()[:2]
            judged[int(q)].add(int(d))
    return _collection("cisi", source.read("CISI.ALL"), source.read("CISI.QRY"), judged)


def cranfield(sources: Path) -> PublicSet:
    source = Source("cranfield", sources)
    judged: dict[int, set[int]] = defaultdict(set)
    for line in source.read("cranqrel").splitlines():
        parts = line.split()
        if len(parts) >= 3 and int(parts[2]) >= 1:
            judged[int(parts[0])].add(int(parts[1]))
    return _collection("cranfield", source.read("cran.all.1400"), source.read("cran.qry"), judged)


LOADERS = {"longmemeval": longmemeval, "cisi": cisi, "cranfield": cranfield}


def load(name: str, sources: Path, per_class: int) -> PublicSet:
    """One public set by name; ``per_class`` is how many of each LongMemEval question type."""
    name = name.strip()
    if name not in LOADERS:
        raise SystemExit(f"no public set named {name!r}: {', '.join(LOADERS)}")
    return longmemeval(sources, per_class) if name == "longmemeval" else LOADERS[name](sources)
