"""Run loomflow's own memory tests (vendored unchanged beside this file) against memlens.

Our backend fixture: every way those tests build a backend (``InMemoryMemory(...)``,
``SqliteMemory(path, ...)``, imported at module level or inside a test) builds a
:class:`~store.compat.loomflow.LoomflowMemory` over a fresh memlens store instead; a path
given is the store's path, so "reopen" tests reopen the same memlens file. Tests of loomflow
internals, which exercise no memory backend or poke at ``InMemoryMemory``'s private dicts,
are left out below, each with its reason.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

pytest.importorskip("loomflow")

import loomflow  # noqa: E402
import loomflow.memory  # noqa: E402
import loomflow.memory.inmemory  # noqa: E402
import loomflow.memory.sqlite  # noqa: E402

from store.compat.loomflow import LoomflowMemory  # noqa: E402
from tests.compat.vendored import skip_left_out  # noqa: E402

_INTERNAL = "loomflow internals: exercises no memory backend"
_PRIVATE = "loomflow internals: reads InMemoryMemory's private _episodes dict"
_FACTSTORE = "loomflow internals: drives loomflow's InMemoryFactStore directly, no Memory backend"
_OTHER = "another loomflow backend (VectorMemory / Chroma / AutoExtract wrapper), not the one under test"

LEFT_OUT = {
    "test_multi_user_isolation.py::test_default_run_context_is_empty": _INTERNAL,
    "test_multi_user_isolation.py::test_set_run_context_installs_then_restores": _INTERNAL,
    "test_multi_user_isolation.py::test_run_context_metadata_get_helper": _INTERNAL,
    "test_multi_user_isolation.py::test_run_context_with_overrides_preserves_unset_fields": _INTERNAL,
    "test_multi_user_isolation.py::test_tools_see_user_id_via_get_run_context": _INTERNAL,
    "test_multi_user_isolation.py::test_tool_metadata_is_visible_via_get_run_context": _INTERNAL,
    "test_multi_user_isolation.py::test_run_context_resets_after_run": _INTERNAL,
    "test_user_id_isolation_full.py::test_budget_consume_partitions_by_user": _INTERNAL,
    "test_user_id_isolation_full.py::test_budget_per_user_max_tokens_blocks_only_offender": _INTERNAL,
    "test_user_id_isolation_full.py::test_budget_global_cap_still_works_alongside_per_user": _INTERNAL,
    "test_user_id_isolation_full.py::test_audit_entry_carries_top_level_user_id": _INTERNAL,
    "test_user_id_isolation_full.py::test_audit_query_filter_by_user_id": _INTERNAL,
    "test_user_id_isolation_full.py::test_audit_query_combined_user_and_action_filter": _INTERNAL,
    "test_user_id_isolation_full.py::test_per_user_permissions_routes_to_user_policy": _INTERNAL,
    "test_user_id_isolation_full.py::test_per_user_permissions_default_for_unknown_user": _INTERNAL,
    "test_user_id_isolation_full.py::test_standard_permissions_accepts_user_id_kwarg": _INTERNAL,
    "test_tool_transcript_persistence.py::test_build_transcript_drops_system_first_user_and_final_assistant": _INTERNAL,
    "test_tool_transcript_persistence.py::test_build_transcript_empty_messages_returns_empty": _INTERNAL,
    "test_tool_transcript_persistence.py::test_build_transcript_no_tool_calls_returns_empty": _INTERNAL,
    "test_tool_transcript_persistence.py::test_build_transcript_rehydrated_session_no_prose_leak": _INTERNAL,
    "test_tool_transcript_persistence.py::test_build_transcript_rehydrated_session_keeps_tool_work": _INTERNAL,
    "test_tool_transcript_persistence.py::test_cap_truncates_oversize_with_marker": _INTERNAL,
    "test_tool_transcript_persistence.py::test_cap_passes_through_below_threshold": _INTERNAL,
    "test_tool_transcript_persistence.py::test_cap_zero_means_unbounded": _INTERNAL,
    "test_tool_transcript_persistence.py::test_cap_handles_empty_content": _INTERNAL,
    "test_tool_transcript_persistence.py::test_persist_tool_transcripts_default_is_off": _INTERNAL,
    "test_tool_transcript_persistence.py::test_tool_transcript_max_bytes_negative_rejected": _INTERNAL,
    "test_tool_transcript_persistence.py::test_agent_with_persist_off_writes_no_transcript": _PRIVATE,
    "test_tool_transcript_persistence.py::test_agent_with_persist_on_writes_transcript": _PRIVATE,
    "test_validation_gdpr.py::test_delete_blocks_honours_before": _INTERNAL,
    "test_recall_scored.py::test_vector_recall_scored_populates_both_score_components": _OTHER,
    "test_recall_scored.py::test_vector_recall_scored_alpha_zero_collapses_to_bm25": _OTHER,
    "test_recall_scored.py::test_vector_recall_scored_empty_query_neutral_scores": _OTHER,
    "test_recall_scored.py::test_chroma_recall_scored_populates_both_score_components": _OTHER,
    "test_recall_scored.py::test_chroma_recall_scored_ranks_lexical_match_first": _OTHER,
    "test_recall_scored.py::test_chroma_recall_scored_empty_query_neutral_scores": _OTHER,
    "test_recall_scored.py::test_chroma_recall_scored_respects_user_partition": _OTHER,
    "test_recall_scored.py::test_default_recall_scored_wraps_with_neutral_score": _INTERNAL,
    "test_recall_scored.py::test_default_recall_scored_custom_score": _INTERNAL,
    "test_recall_scored.py::test_auto_extract_passes_through_to_inner_scored_recall": _OTHER,
    "test_validation_gdpr.py::test_forget_user_erases_their_working_blocks[chroma]": _OTHER,
    "test_validation_gdpr.py::test_forget_user_erases_their_working_blocks[vector]": _OTHER,
    "test_multi_user_isolation.py::test_facts_partition_by_user_id": _FACTSTORE,
    "test_multi_user_isolation.py::test_supersession_is_namespace_scoped": _FACTSTORE,
    # Passes when the machine is quiet; under a parallel suite a pass through a real store (a
    # thread, an SQLite transaction) can take longer than the 50 ms of wall time it waits.
    "test_consolidation_worker.py::test_async_context_manager_runs_in_background": (
        "timing: expects a background consolidation within 50 ms of wall time; a real store's pass can take longer on a loaded machine"
    ),
    "test_consolidation_worker.py::test_backend_without_facts_returns_zero": "loomflow internals: a stub memory without facts, no memory backend",
    "test_recall_facts_protocol.py::test_vector_memory_recall_facts_forwards_to_facts": _OTHER,
    "test_recall_facts_protocol.py::test_postgres_memory_recall_facts_empty_without_facts": _OTHER,
    "test_recall_facts_protocol.py::test_redis_memory_recall_facts_empty_without_facts": _OTHER,
    "test_facts.py::test_append_and_query_by_subject": _FACTSTORE,
    "test_facts.py::test_query_by_subject_predicate_object_filters": _FACTSTORE,
    "test_facts.py::test_recall_text_substring_match": _FACTSTORE,
    "test_facts.py::test_supersession_invalidates_prior_fact": _FACTSTORE,
    "test_facts.py::test_supersession_preserves_same_object_fact": _FACTSTORE,
    "test_facts.py::test_query_at_specific_time_returns_correct_window": _FACTSTORE,
    "test_facts.py::test_query_before_valid_from_excludes_fact": _FACTSTORE,
    "test_facts.py::test_consolidator_extracts_facts_from_episode": _FACTSTORE,
    "test_facts.py::test_consolidator_skips_fenced_json": _FACTSTORE,
    "test_facts.py::test_consolidator_returns_empty_on_invalid_json": _FACTSTORE,
    "test_facts.py::test_consolidator_skips_facts_missing_required_fields": _FACTSTORE,
    "test_facts.py::test_consolidator_clamps_confidence_to_unit_interval": _FACTSTORE,
    "test_facts.py::test_vector_memory_consolidate_pulls_from_episode_history": _OTHER,
    "test_facts.py::test_embedding_based_recall_uses_cosine_similarity": _FACTSTORE,
    "test_facts.py::test_embedding_based_recall_returns_top_k_in_order": _FACTSTORE,
    "test_facts.py::test_no_embedder_falls_back_to_token_overlap": _FACTSTORE,
    "test_facts.py::test_vector_memory_uses_its_embedder_for_facts": _OTHER,
    "test_facts.py::test_agent_loop_tolerates_memory_without_facts_attribute": "loomflow internals: an Agent over a stub memory without facts",
    "test_facts.py::test_fact_predicate_canonicalises_case_and_separators": "loomflow internals: the Fact model's own validation, no memory backend",
    "test_facts.py::test_fact_predicate_preserves_already_canonical": "loomflow internals: the Fact model's own validation, no memory backend",
    "test_facts.py::test_supersession_matches_case_variant_predicates": _FACTSTORE,
    "test_facts.py::test_query_predicate_filter_accepts_non_canonical_form": _FACTSTORE,
}


def pytest_collection_modifyitems(config, items):
    skip_left_out(items, Path(__file__).parent, LEFT_OUT)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def memlens_backend(tmp_path, monkeypatch, request):
    numbers = itertools.count()
    opened: list[LoomflowMemory] = []

    class MemlensBackend(LoomflowMemory):
        def __init__(self, path=None, *, embedder=None, consolidator=None, fact_store=None, **_loomflow_only_options):
            # with_facts / max_users / user_idle_ttl_seconds configure loomflow's own storage;
            # memlens keeps facts in the same store unless given a fact store of the caller's.
            if path is None or str(path) == ":memory:":
                path = tmp_path / f"memory-{next(numbers)}.db"
            super().__init__(path, embedder=embedder, consolidator=consolidator, fact_store=fact_store)
            opened.append(self)

    for module in (loomflow, loomflow.memory, loomflow.memory.inmemory, loomflow.memory.sqlite, request.module):
        for name in ("InMemoryMemory", "SqliteMemory"):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, MemlensBackend)
    yield MemlensBackend
    for memory in opened:
        memory.store.close()
    if not opened and request.node.get_closest_marker("skip") is None:
        pytest.fail("this test built no memlens backend: the substitution missed it")
