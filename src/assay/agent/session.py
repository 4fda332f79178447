"""The state of one session line: the server-side continuation id and adapter-private typed slots.

The runner guarantees only that every send on one line gets the same `AgentSession` and a new line
gets a fresh one; slots are told apart by object identity, never by name.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

T = TypeVar("T")


class SessionSlot(Generic[T]):
    """A typed key into `AgentSession`, declared once at adapter module scope."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"SessionSlot({self.name!r})"


def create_session_slot(name: str) -> SessionSlot[Any]:
    return SessionSlot(name)


class AgentSession:
    __slots__ = ("_id", "_values")

    def __init__(self) -> None:
        self._id: str | None = None
        self._values: dict[SessionSlot[Any], Any] = {}

    @property
    def id(self) -> str | None:
        """The continuation id remembered for this line; None on a new line."""
        return self._id

    def capture(self, session_id: str | None) -> None:
        """Remember a server-side id: the first non-empty value wins."""
        if self._id is None and session_id:
            self._id = session_id

    def get(self, slot: SessionSlot[T]) -> T | None:
        return self._values.get(slot)

    def set(self, slot: SessionSlot[T], value: T) -> None:
        self._values[slot] = value

    def take(self, slot: SessionSlot[T]) -> T | None:
        """Read and clear: paused state is consumed exactly once."""
        return self._values.pop(slot, None)

    def end(self) -> None:
        """The line is over (its attempt ended, however): each value with a `session_ended()` (a paused stream
        holding its connection open) is told so, and the values are dropped."""
        if not self._values:  # (most lines: nothing held; this runs at every attempt's end)
            return
        values, self._values = list(self._values.values()), {}
        for value in values:
            ended = getattr(value, "session_ended", None)
            if callable(ended):
                try:
                    ended()
                except Exception:  # noqa: BLE001 - closing what is left must not undo the attempt's sealed result
                    pass


__all__ = ["AgentSession", "SessionSlot", "create_session_slot"]
