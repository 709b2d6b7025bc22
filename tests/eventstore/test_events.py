"""The event catalogue: frozen, past tense, and tags that never change."""

from __future__ import annotations

import msgspec
import pytest
from chronograph.eventstore import CATALOGUE, EntityCreated, RelationCreated, event_type

# Tags are stored in every log ever written: this list may only grow.
STABLE_TAGS = {
    "EntityCreated": "entity_created",
    "ObservationsAdded": "observations_added",
    "ObservationsDeleted": "observations_deleted",
    "EntityUpdated": "entity_updated",
    "EntityDeleted": "entity_deleted",
    "RelationCreated": "relation_created",
    "RelationUpdated": "relation_updated",
    "RelationDeleted": "relation_deleted",
    "ContextUpdated": "context_updated",
    "EntityRenamed": "entity_renamed",
    "EntityMerged": "entity_merged",
    "ObservationsInvalidated": "observations_invalidated",
    "RelationInvalidated": "relation_invalidated",
    "OrganizationCreated": "organization_created",
    "ProjectCreated": "project_created",
    "ProjectUpdated": "project_updated",
    "SessionStarted": "session_started",
    "SessionEnded": "session_ended",
    "EntryAdded": "entry_added",
    "EntryUpdated": "entry_updated",
    "EntryDeactivated": "entry_deactivated",
    "EntryReactivated": "entry_reactivated",
    "TagCreated": "tag_created",
    "TagAttached": "tag_attached",
    "TagDetached": "tag_detached",
    "EntryRelationCreated": "entry_relation_created",
    "EntryRelationDeleted": "entry_relation_deleted",
    "FileCheckedOut": "file_checked_out",
    "FileCheckedIn": "file_checked_in",
    "FileForceUnlocked": "file_force_unlocked",
    "ConflictDetected": "conflict_detected",
    "ConflictResolved": "conflict_resolved",
    "TeamMemoryReset": "team_memory_reset",
    "ContentErased": "content_erased",
    "EntityForgotten": "entity_forgotten",
    "EntityRestored": "entity_restored",
    "EntryForgotten": "entry_forgotten",
    "TokenIssued": "token_issued",
    "TokenRevoked": "token_revoked",
}


def test_every_event_keeps_its_stable_tag() -> None:
    assert {cls.__name__: event_type(cls) for cls in CATALOGUE} == STABLE_TAGS


def test_no_two_events_share_a_tag() -> None:
    tags = [event_type(cls) for cls in CATALOGUE]
    assert len(tags) == len(set(tags))


@pytest.mark.parametrize("cls", CATALOGUE, ids=lambda cls: cls.__name__)
def test_every_event_is_named_in_the_past_tense(cls: type) -> None:
    assert cls.__name__.endswith((
        "Created", "Added", "Deleted", "Updated", "Started", "Ended", "Deactivated", "Reactivated", "Renamed", "Merged",
        "Invalidated",
        "Attached", "Detached",
        "CheckedOut", "CheckedIn", "Unlocked", "Detected", "Resolved", "Reset", "Erased", "Forgotten", "Restored",
        "Issued", "Revoked",
    ))


def test_events_are_frozen() -> None:
    event = EntityCreated(workspace="default", name="Ada", entity_type="person")
    with pytest.raises(AttributeError):
        event.name = "Grace"  # type: ignore[misc]


def test_events_use_the_tool_spelling_on_the_wire() -> None:
    relation = RelationCreated(workspace="w", source="Ada", target="Babbage", relation_type="knows")
    assert msgspec.json.decode(msgspec.json.encode(relation)) == {
        "type": "relation_created",
        "workspace": "w",
        "from": "Ada",
        "to": "Babbage",
        "relationType": "knows",
    }
