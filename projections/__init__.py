"""Views folded from the event log: entities, relations, context, history, search."""

__all__: list[str] = []
