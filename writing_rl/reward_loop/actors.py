"""Handles to the named per-run actors every reward worker shares (group collector, reference scheduler)."""

from __future__ import annotations

import functools
from typing import Any, Callable

import ray


@functools.cache
def remote_class(cls: type):
    """``ray.remote(cls)``, made once per process. Each call makes a new actor class, its methods wrapped
    again and kept: a worker that looks its actors up at every batch (``SharedActor``) piled them up."""
    return ray.remote(cls)


class SharedActor:
    """A named actor looked up (or created) by ``create``, refreshed at each new batch.

    The refresh replaces an actor that died between steps. The first handle is kept while it points at
    the live actor: the worker that created a non-detached actor owns it, and Ray collects the actor
    when its owner drops that handle.
    """

    def __init__(self, create: Callable[[], Any]):
        self._create = create
        self._handle = None
        self._batch = -1

    def get(self, batch: int):
        if self._handle is None or batch != self._batch:
            found = self._create()
            if self._handle is None or found._actor_id != self._handle._actor_id:
                self._handle = found
            self._batch = batch
        return self._handle

    def forget(self) -> None:
        """After the actor died under a call: the next ``get`` finds or creates a new one."""
        self._handle = None
