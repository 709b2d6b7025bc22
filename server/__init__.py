"""The MCP adapter: a profile's tools as SDK tools, resources, the stdio and HTTP transports.

The only package besides the command line that imports the MCP SDK; everything it
serves comes from the core (`chronograph.application`).
"""

__all__: list[str] = []
