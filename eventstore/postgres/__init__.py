"""The log in PostgreSQL: one database shared by many servers on many hosts.

`address` reads a URL and a schema without the driver; the rest needs the `postgresql`
extra (psycopg 3), so it is imported where a database store is opened: `log` (`PgLog`),
`reader` and `writer` (its transactions) and `schema` (its tables).
"""

from chronograph.eventstore.postgres.address import is_database_url, shown, split_url

__all__ = ["is_database_url", "shown", "split_url"]
