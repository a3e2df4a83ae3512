"""The one way the inspector runs store work: a thread worker of the widget or screen that asked,
whose result comes back to that widget as a message, and whose failure reaches the App.

A store error becomes an ``ActionFailed`` (a damaged store a ``StoreFailed``); anything else the
work raises, a ``WorkerFailed``. Each is posted to the widget and bubbles up to the App, which
shows it. Reported here, in the worker, because Textual's ``Worker.StateChanged`` does not bubble:
left to fail, a widget's worker would go unseen unless every widget handled its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.dom import DOMNode
from textual.worker import get_current_worker

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
    ActionFailed, a damaged store as a StoreFailed, anything else as a WorkerFailed. The result
    of a worker replaced by a newer one in an exclusive group is dropped."""
    from store.errors import MemlensError

    expected: tuple[type[BaseException], ...] = (MemlensError, *errors)

    def job() -> None:
        worker = get_current_worker()
        try:
            result = call()
            if worker.is_cancelled:
                return
            message = then(result)
        except expected as error:
            node.post_message(messages.StoreFailed(str(error)) if is_damage(error) else messages.ActionFailed(what, str(error)))
            return
        except Exception as error:  # a bug, not the store's refusal: the App shows it and stays usable
            node.post_message(messages.WorkerFailed(worker, error))
            return
        if message is not None:
            node.post_message(message)

    node.run_worker(job, thread=True, group=group, exclusive=exclusive, exit_on_error=False)
