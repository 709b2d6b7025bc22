"""Organisations, projects and sessions of the team memory."""

from __future__ import annotations

import pytest
from chronograph.application import ChronographError, Memory
from support.team import call


def test_a_project_is_not_renamed_to_a_name_its_organisation_holds(memory: Memory) -> None:
    o1 = call(memory, "memory_org", action="create", name="o1")["organization"]["id"]
    o2 = call(memory, "memory_org", action="create", name="o2")["organization"]["id"]
    call(memory, "memory_project", action="create", name="api", orgId=o1)
    web = call(memory, "memory_project", action="create", name="web", orgId=o1)["project"]["id"]
    head = memory.log.head()
    with pytest.raises(ChronographError, match=f"A project named 'api' already exists in organization {o1}") as caught:
        memory.call("memory_project", {"action": "update", "id": web, "name": "api"}, actor="agent")
    assert caught.value.code == "duplicate" and memory.log.head() == head
    call(memory, "memory_project", action="create", name="api", orgId=o2)  # another organisation's name is free
    renamed = call(memory, "memory_project", action="update", id=web, name="site", description="the shop")
    assert renamed["project"]["name"] == "site"
    assert call(memory, "memory_project", action="update", id=web, name="site")["project"]["name"] == "site"


def test_a_project_got_by_id_with_another_organisation_is_not_found(memory: Memory) -> None:
    o1 = call(memory, "memory_org", action="create", name="o1")["organization"]["id"]
    o2 = call(memory, "memory_org", action="create", name="o2")["organization"]["id"]
    api = call(memory, "memory_project", action="create", name="api", orgId=o1)["project"]["id"]
    with pytest.raises(ChronographError, match=f"not found in organization {o2}") as missing:
        memory.call("memory_project", {"action": "get", "id": api, "orgId": o2}, actor="agent")
    assert missing.value.code == "not_found"
    assert call(memory, "memory_project", action="get", id=api, orgId=o1)["project"]["id"] == api
