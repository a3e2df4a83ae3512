"""bob, a developer with a coding assistant: tickets, failing tests, deploys, a framework switch."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..memory import MemoryStore

import random
from datetime import datetime

from .weave import Fact, Persona, Planted, Topic, Turn, weave

CODE = {
    "ticket": ("PAY-1187", "PAY-2210", "PAY-0954", "OPS-318", "OPS-402", "WEB-771", "WEB-805"),
    "test": (
        "test_orders_list",
        "test_orders_create",
        "test_refund_partial",
        "test_login_expired",
        "test_cart_merge",
        "test_invoice_pdf",
        "test_webhook_retry",
    ),
    "module": (
        "orders/api.py",
        "payments/refunds.py",
        "auth/session.py",
        "cart/merge.py",
        "billing/invoice.py",
        "webhooks/dispatch.py",
        "common/db.py",
    ),
    "error": (
        "KeyError: 'currency'",
        "TimeoutError after 30 s",
        "IntegrityError: duplicate key",
        "AttributeError: 'NoneType' object has no attribute 'id'",
        "AssertionError: 402 != 200",
        "RecursionError in serializer",
    ),
    "branch": ("fix/refund-rounding", "feat/async-client", "chore/bump-deps", "fix/session-expiry", "feat/invoice-pdf"),
    "lib": ("httpx", "orjson", "SQLAlchemy", "pydantic", "structlog", "tenacity"),
    "ms": ("180", "240", "320", "410", "95", "650"),
}

TOPICS = [
    Topic(
        "debug-{n}",
        (
            Turn(
                "{test} fails with {error}.",
                "The fixture in {module} returns a stale row; refresh it after the commit.",
                "run_tests",
                ("test",),
            ),
            Turn(
                "Show me where {error} comes from in {module}.",
                "Line 88 reads the field before validation; move the check up.",
                "read_file",
                ("module",),
            ),
            Turn("Run {test} again with -x.", "{test} passes now; the full suite has 2 unrelated failures.", "run_tests", ("test",)),
            Turn("Why does {test} only fail on CI?", "CI runs tests in random order; {test} depends on state another test leaves behind."),
            Turn("Add a regression test for {error}.", "Added a regression test next to {test} that reproduces {error} before the fix."),
            Turn("Is the fix in {module} safe to backport?", "Yes, it touches only {module} and has no schema change."),
        ),
        CODE,
        ("branch",),
    ),
    Topic(
        "review-{n}",
        (
            Turn(
                "Review my branch {branch}.",
                "Two issues: an unhandled None in {module}, and a missing index for the new query.",
                "git_diff",
                ("branch",),
            ),
            Turn("Is using {lib} here a good idea?", "{lib} fits; pin the minor version and wrap it so tests can fake it."),
            Turn(
                "Rewrite the loop in {module} to be clearer.",
                "Replaced the nested loop in {module} with a dict lookup; same output, easier to read.",
            ),
            Turn("Write the commit message for {branch}.", '"{module}: handle missing currency on refunds; regression test added".'),
            Turn("Squash the fixup commits on {branch}.", "Squashed into 3 commits; force-pushed with lease.", "git_rebase", ("branch",)),
        ),
        CODE,
        ("branch",),
    ),
    Topic(
        "tickets-{n}",
        (
            Turn("What's the status of {ticket}?", "{ticket} is in review; one approval, waiting on QA.", "tracker_lookup", ("ticket",)),
            Turn("Summarise {ticket} for standup.", "{ticket}: fix is merged behind a flag, rollout planned for Thursday."),
            Turn(
                "Link {ticket} to branch {branch}.",
                "Linked {ticket} to {branch}; the tracker will close it on merge.",
                "tracker_update",
                ("ticket", "branch"),
            ),
            Turn("Estimate {ticket}.", "About two days: one for the change in {module}, one for tests and review."),
        ),
        CODE,
        ("branch",),
    ),
    Topic(
        "perf-{n}",
        (
            Turn(
                "The orders endpoint takes {ms} ms at p95.",
                "Most of it is N+1 queries in {module}; eager-load the line items.",
                "profile_endpoint",
                ("ms",),
            ),
            Turn(
                "Profile {module} under load.",
                "py-spy shows 40% in JSON encoding; switching to orjson should halve it.",
                "profile",
                ("module",),
            ),
            Turn("Would caching help {module}?", "A 60-second cache cuts p95 from {ms} ms to about 90 ms; orders must stay uncached."),
            Turn("Benchmark {lib} against the current code.", "{lib} is 1.8x faster on our payloads; memory is about the same."),
        ),
        CODE,
        ("branch",),
    ),
    Topic(
        "ops-{n}",
        (
            Turn(
                "Roll out {branch} to staging.", "Deployed {branch} to staging; health checks green after 2 minutes.", "deploy", ("branch",)
            ),
            Turn(
                "The staging pods keep restarting after deploying {branch}.",
                "The readiness probe times out at 1 s; {branch} needs ~3 s to warm up.",
            ),
            Turn(
                "Check the error rate since {branch} went out.",
                "Error rate is 0.2% since {branch}, same as before.",
                "metrics_query",
                ("branch",),
            ),
            Turn(
                "Roll back {branch} on staging.", "Rolled {branch} back to the previous release; all pods healthy.", "deploy", ("branch",)
            ),
            Turn("Bump the Helm chart for {lib}.", "Chart values updated; the new image tag is in the pull request."),
        ),
        CODE,
        ("branch",),
    ),
]

PLANTED = [
    Planted(
        52,
        "onboarding",
        "Our orders service is Python 3.11 on FastAPI.",
        "Noted: Python 3.11 with FastAPI. I'll keep suggestions compatible.",
        "fastapi",
    ),
    Planted(
        51.9,
        "onboarding",
        "We deploy on Kubernetes with Helm charts.",
        "Good to know: Kubernetes and Helm. I can help with chart values too.",
        "k8s",
    ),
    Planted(
        51.8,
        "onboarding",
        "The team uses PostgreSQL 14 for everything.",
        "PostgreSQL 14 it is; I'll avoid features newer than that.",
        "pg14",
    ),
    Planted(
        30,
        "refactor-async",
        "We switched from FastAPI to Litestar this sprint.",
        "Understood, your service now runs on Litestar; I'll adapt the examples.",
        "litestar",
    ),
    Planted(
        29,
        "refactor-async",
        "The async version leaks connections.",
        "Create the AsyncClient once in the app lifespan and close it on shutdown.",
        "leak",
    ),
    Planted(
        25,
        "upgrade-db",
        "The database was upgraded to PostgreSQL 16 last night.",
        "PostgreSQL 16 noted; MERGE and the new JSON functions are available now.",
        "pg16",
    ),
    # A paraphrase target: none of its words are in the demo guide's query about it (docs/demo.md).
    Planted(
        18,
        "incident-0412",
        "The nightly deploy broke because the container ran out of memory.",
        "Raised the memory limit to 1 GiB and added an alert at 80% usage.",
        "oom",
        {"name": "deploy_logs", "arguments": {"job": "nightly"}, "result": "OOMKilled"},
    ),
    # An exact ticket id among near misses.
    Planted(
        14,
        "tickets-payments",
        "PAY-1432: refunds round to the wrong cent for yen.",
        "Zero-decimal currencies must skip the ×100 step; fix in payments/refunds.py.",
        "ticket",
        {"name": "tracker_lookup", "arguments": {"ticket": "PAY-1432"}, "result": "open"},
    ),
    Planted(13.8, "tickets-payments", "Close PAY-1423, it was a duplicate.", "PAY-1423 closed as a duplicate of PAY-1187."),
    Planted(13.6, "tickets-payments", "Who owns PAY-1342?", "PAY-1342 is assigned to Dana on the payments team."),
    Planted(
        13.4, "tickets-payments", "Reopen PAY-1433, the webhook still fires twice.", "PAY-1433 reopened with the new log excerpt attached."
    ),
    # Near duplicates: the same words, different meanings.
    Planted(8, "incident-0504", "The migration ran before the deploy.", "Fine: the new column is nullable, so old pods keep working."),
    Planted(
        7.9,
        "incident-0504",
        "The deploy ran before the migration.",
        "That's why the new pods crashed: they queried a column that did not exist yet.",
        "order",
    ),
]

FACTS = [
    Fact("orders-service", "framework", "FastAPI", 52, "fastapi"),
    Fact("orders-service", "framework", "Litestar", 30, "litestar"),
    Fact("orders-service", "python_version", "3.11", 52, "fastapi"),
    Fact("orders-service", "deploys_on", "Kubernetes (Helm)", 51.9, "k8s"),
    Fact("orders-service", "database", "PostgreSQL 14", 51.8, "pg14"),
    Fact("orders-service", "database", "PostgreSQL 16", 25, "pg16"),
    Fact("orders-service", "memory_limit", "512 MiB", 52),
    Fact("orders-service", "memory_limit", "1 GiB", 18, "oom"),
    Fact("bob", "editor", "Neovim", 60),
    Fact("bob", "team", "payments", 60, confidence=0.8),
]

# What the project block said before the move to Litestar (days ago, block, content).
EARLIER_BLOCKS: list[tuple[float, str, str]] = [
    (52, "project", "Orders service: Python 3.11, FastAPI, PostgreSQL 16."),
    (45, "project", "Orders service: Python 3.11, FastAPI, PostgreSQL 16, deployed on Kubernetes via Helm."),
]

BLOCKS = [
    ("persona", "Senior Python engineer pairing with Bob. Shows code, explains trade-offs."),
    ("project", "Orders service: Python 3.11, Litestar, PostgreSQL 16, deployed on Kubernetes via Helm."),
    ("conventions", "Small commits, tests first for bug fixes, no force-push without lease."),
]


def async_refactor(store: MemoryStore, user_id: str | None) -> None:
    """A session checkpointed mid-task, then finished (the compact store has it too)."""
    refactor = store.session("refactor-async", user_id=user_id)
    refactor.set("branch", "feat/async-client")
    refactor.set("failing_tests", ["test_orders_list", "test_orders_create"])
    refactor.set_task_state("Make the HTTP layer async", total_steps=4, current_step=3)
    refactor.append_scratchpad("Connection leak: AsyncClient created per request.")
    refactor.create_checkpoint("before lifespan change")
    refactor.set("failing_tests", [])
    refactor.update_task_progress(4, status="done")


def working(store: MemoryStore, user_id: str | None, ids: dict[str, str]) -> None:
    """An async refactor checkpointed mid-task, then finished; a ticket fix still open."""
    async_refactor(store, user_id)
    ticket = store.session("tickets-payments", user_id=user_id)
    ticket.set("ticket", "PAY-1432")
    ticket.set("source_episode", ids["ticket"])
    ticket.set_task_state("Fix PAY-1432 yen rounding", total_steps=3, current_step=1, data={"module": "payments/refunds.py"})
    ticket.append_scratchpad("JPY, KRW, CLP are zero-decimal: check the currency table, not a hard-coded list.")
    ticket.create_checkpoint("reproduced in a test")
    ticket.update_task_progress(2)


def persona(rng: random.Random, now: datetime) -> Persona:
    episodes, keys = weave(rng, TOPICS, now=now, days=60, sessions=64, turns=(4, 6), planted=PLANTED, model="code-assistant-7")
    return Persona("bob", episodes, keys, BLOCKS, FACTS, working, EARLIER_BLOCKS)
