"""The commands the event store's errors advise name the store they are about."""

from __future__ import annotations

import shlex

from chronograph.eventstore.errors import advised, advised_copy


def test_an_advised_command_names_its_store_quoted_for_a_shell() -> None:
    command = advised("replay --verify", "/home/ada/my memory")
    assert command == "`chronograph replay --verify --store '/home/ada/my memory'`"
    assert shlex.split(command.strip("`"))[-1] == "/home/ada/my memory"


def test_a_copy_reads_from_the_store_and_an_unknown_store_is_left_to_the_reader() -> None:
    assert advised_copy("/srv/store") == "`chronograph copy --from /srv/store --to NEW`"
    assert advised("scrub", "") == "`chronograph scrub`"
    assert advised_copy("") == "`chronograph copy --from STORE --to NEW`"


def test_an_advised_command_names_the_cache_of_a_database_store_where_one_is_given() -> None:
    command = advised("scrub", "postgresql://db.example/memory", "/home/ada/my cache")
    assert command == "`chronograph scrub --store postgresql://db.example/memory --cache '/home/ada/my cache'`"
