"""The Catalog application: every use case that changes the catalog, on one event store.

The use cases are grouped by what they change: tools and aliases (`tool_cases`), subjects, connectors
and grants (`subject_cases`), and here the catalog-wide ones (naming policy, releases, seals). Each
group is a typed subclass of `CatalogApplication`, which owns reading aggregates, writing batches and
the history feed; `Catalog` joins the groups into the one application every caller uses.
"""
from __future__ import annotations

from domain.application import Batch, EventRef, WriteResult
from domain.base import Meta
from domain.errors import PolicyAlreadySet
from domain.grammar import check_policy, check_version_text
from domain.history import HistoryRecord
from domain.mcp_cases import McpServerUseCases
from domain.naming import NamingPolicy
from domain.policy import POLICY_KEY, CatalogPolicy
from domain.route_cases import RouteUseCases
from domain.proposal_cases import ProposalUseCases
from domain.schema_cases import SchemaUseCases
from domain.seals import SEALS_KEY, SealLog
from domain.subject_cases import SubjectUseCases
from domain.tool_cases import ToolUseCases

__all__ = ["Catalog", "EventRef", "HistoryRecord", "WriteResult"]


class Catalog(ToolUseCases, SubjectUseCases, RouteUseCases, ProposalUseCases, SchemaUseCases,
              McpServerUseCases):
    name = "Catalog"

    def init(self, policy: NamingPolicy, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            check_policy(policy)
            stored = self.get_or_none(POLICY_KEY, CatalogPolicy)
            if stored is not None and stored.policy != policy:
                raise PolicyAlreadySet(
                    f"this catalog already uses the naming policy '{stored.policy.name}'; a catalog's "
                    "naming policy cannot change", current=stored.policy.name, requested=policy.name)
            if stored is None:
                batch.add(CatalogPolicy.record(policy, meta))
        return self.execute("init", {"policy": policy.model_dump(mode="json")}, meta, build)

    def publish_release(self, version: str, meta: Meta) -> WriteResult:
        def build(batch: Batch) -> None:
            check_version_text(version)
            train = batch.releases()
            train.publish(version, meta)
            batch.add(train)
        return self.execute("release.publish", {"version": version}, meta, build)

    def plan_release(self, version: str, date: str, meta: Meta) -> WriteResult:
        """Record a future release's planned date."""
        def build(batch: Batch) -> None:
            train = batch.releases()
            train.plan(version, date, meta)
            batch.add(train)
        return self.execute("release.plan", {"version": version, "date": date}, meta, build)

    def seal(self, position: int, head: str, events: int, meta: Meta) -> WriteResult:
        """Record a seal: the verified chain head up to `position`."""
        def build(batch: Batch) -> None:
            log = self.get_or_none(SEALS_KEY, SealLog) or SealLog.start(meta)
            log.seal(position, head, events, meta)
            batch.add(log)
        return self.execute("audit.seal", {"position": position, "hash": head}, meta, build)

    def accept_altered_history(self, altered: list[dict], seals: list[int], meta: Meta) -> WriteResult:
        """Record that the history as it now stands is accepted although it disagrees with the hashes the
        read model recorded (`altered`: position, old_hash, new_hash) and the seals at `seals`."""
        def build(batch: Batch) -> None:
            log = self.get_or_none(SEALS_KEY, SealLog) or SealLog.start(meta)
            log.accept_altered(altered, seals, meta)
            batch.add(log)
        return self.execute("audit.accept_altered_history", {"altered": altered, "seals": seals}, meta, build)
