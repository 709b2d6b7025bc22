"""The MCP surface: tool schemas, commands that decide events, queries, transports."""

__all__: list[str] = []
