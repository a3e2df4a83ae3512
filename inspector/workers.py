"""The one way the inspector runs store work: a thread worker of the widget or screen that asked,
whose result comes back to that widget as a message, and whose failure reaches the App.

A store error becomes an ``ActionFailed`` (a damaged store a ``StoreFailed``), posted to the
widget and bubbling up to the App, which shows it. A worker that raised anything else posts a
``WorkerFailed`` the same way: Textual's ``Worker.StateChanged`` does not bubble, so without it a
widget's failed worker would go unseen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.dom import DOMNode
from textual.worker import Worker, WorkerState, get_current_worker

from . import messages
from .failures import is_damage


def call_store(
    node: DOMNode,
    what: str,
    call: Callable[[], Any],
    then: Callable[[Any], Any],
    *,
    group: str,
    exclusive: bool = False,
    errors: tuple[type[BaseException], ...] = (),
) -> None:
    """Run ``call`` in a thread worker of ``node``, then ``then(result)`` there too; a message it
    returns is posted to ``node``. A store error (or one of ``errors``) is posted as an
    ActionFailed, a damaged store as a StoreFailed; anything else fails the worker (see
    :func:`report_failure`). The result of a worker replaced by a newer one in an exclusive group
    is dropped."""
    from store.errors import MemlensError

    expected: tuple[type[BaseException], ...] = (MemlensError, *errors)

    def job() -> None:
        try:
            result = call()
        except expected as error:
            node.post_message(messages.StoreFailed(str(error)) if is_damage(error) else messages.ActionFailed(what, str(error)))
            return
        if not get_current_worker().is_cancelled:
            message = then(result)
            if message is not None:
                node.post_message(message)

    node.run_worker(job, thread=True, group=group, exclusive=exclusive, exit_on_error=False)


def report_failure(node: DOMNode, event: Worker.StateChanged) -> None:
    """For a widget's ``on_worker_state_changed``: a worker that raised is posted as a WorkerFailed, which bubbles to the App."""
    if event.state == WorkerState.ERROR:
        node.post_message(messages.WorkerFailed(event.worker, event.worker.error))
