"""How a server publishes one table to a client subscribed to several publications.

pgoutput decides once per relation (``get_rel_sync_entry`` in
src/backend/replication/pgoutput/pgoutput.c), and this module follows it:

* the relation the changes are published as: a partition is published as its topmost
  ancestor that a ``publish_via_partition_root`` publication includes; the publications
  that count for filters and column lists are those of that (highest) ancestor level;
* the actions: the union of every including publication's ``publish`` (a partitioned table
  itself counts only through a via-root publication);
* row filters (``pgoutput_row_filter_init``), per action: OR of the publications'
  filters, none at all if one publication publishing that action has no filter (FOR ALL
  TABLES, TABLES IN SCHEMA, or a table listed without WHERE);
* the column list (``pgoutput_column_list_init``): the same for every publication, or the
  walsender stops with "cannot use different column lists"; generated columns are sent
  only from 18, when listed or with ``publish_generated_columns = stored``.

And what ``pg_get_publication_tables`` (src/backend/catalog/pg_publication.c) answers the
subscriber's catalog queries with: per publication, its tables (partitions or roots as
``publish_via_partition_root`` says), their column numbers and row filter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import majors
from .publications import Expression, Publication
from .scenario import Column, Scenario, Table

__all__ = ["RelSync", "rel_sync", "PubTable", "publication_tables", "published_columns"]

_DML = ("insert", "update", "delete")


@dataclass(frozen=True, slots=True)
class RelSync:
    """What pgoutput sends for changes of ``table``."""

    table: Table
    #: The relation the changes are sent as (the table, or its root with via-root).
    publish_as: Table
    actions: frozenset[str]
    #: Per action (insert, update, delete): the row filters OR-ed; () means every row.
    filters: Mapping[str, tuple[Expression, ...]]
    #: The columns of ``publish_as`` that are sent, in table order.
    columns: tuple[Column, ...]
    #: The walsender's ERROR for this relation (different column lists), or None.
    error: str | None = None

    def publishes(self, action: str) -> bool:
        return action in self.actions

    def passes(self, action: str, row: Mapping[str, Any]) -> bool:
        filters = self.filters.get(action, ())
        return not filters or any(f.matches(row) for f in filters)


def _in_pub(scenario: Scenario, pub: Publication, table: Table) -> bool:
    """The table is in the publication by itself or by its schema (pg_publication_rel or
    pg_publication_namespace), not through ALL TABLES."""
    return pub.lists(table.qualified_name) or pub.in_schema(table.qualified_name)


def published_columns(table: Table, pub: Publication | None, major: int) -> tuple[Column, ...]:
    """The columns one publication sends of *table* (``pub`` None: no publication's list)."""
    entry = pub.entry(table.qualified_name) if pub is not None else None
    if entry is not None and entry.columns is not None:
        listed = set(entry.columns)
        return tuple(c for c in table.columns if c.name in listed)
    stored = majors.major(major).publish_generated_columns and pub is not None and pub.generated_columns == "stored"
    return tuple(c for c in table.columns if c.generated is None or stored)


def rel_sync(scenario: Scenario, table: Table, pubs: Sequence[Publication], major: int) -> RelSync:
    ancestors = scenario.ancestors(table)
    publish_as = table
    level = 0  # publish_ancestor_level
    rel_pubs: list[Publication] = []
    actions: set[str] = set()
    for pub in pubs:
        pub_as = table
        anc_level = 0
        publish = False
        if pub.all_tables:
            publish = True
            if pub.via_root and ancestors:
                pub_as, anc_level = ancestors[-1], len(ancestors)
        if not publish:
            # GetTopMostAncestorInPublication: the highest ancestor this publication has
            top = None
            for i, anc in enumerate(ancestors):
                if _in_pub(scenario, pub, anc):
                    top = (anc, i + 1)
            if top is not None:
                publish = True
                if pub.via_root:
                    pub_as, anc_level = top
            if _in_pub(scenario, pub, table):
                publish = True
        if not publish:
            continue
        if table.relkind != "p" or pub.via_root:
            actions |= pub.actions
        if level > anc_level:
            continue
        if level < anc_level:
            publish_as, level, rel_pubs = pub_as, anc_level, []
        rel_pubs.append(pub)
    filters: dict[str, tuple[Expression, ...]] = {}
    for action in _DML:
        exprs: list[Expression] = []
        unfiltered = False
        for pub in rel_pubs:
            if action not in pub.actions:
                continue
            entry = pub.entry(publish_as.qualified_name)
            if entry is None or entry.where is None:
                unfiltered = True
                break
            if entry.where not in exprs:
                exprs.append(entry.where)
        filters[action] = () if unfiltered else tuple(exprs)
    error = None
    columns: tuple[Column, ...] = published_columns(publish_as, None, major)
    for i, pub in enumerate(rel_pubs):
        cols = published_columns(publish_as, pub, major)
        if i == 0:
            columns = cols
        elif cols != columns:
            error = (f'cannot use different column lists for table "{publish_as.schema}.{publish_as.name}" '
                     "in different publications")
    return RelSync(table, publish_as, frozenset(actions), filters, columns, error)


# ------------------------------------------------------------------------------------------
# pg_get_publication_tables
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PubTable:
    """One row of ``pg_get_publication_tables(pub)``."""

    publication: Publication
    table: Table
    #: attnums of the published columns; None where the major answers NULL (15 without a list).
    attrs: tuple[int, ...] | None
    where: Expression | None


def _expand(scenario: Scenario, table: Table, via_root: bool) -> list[Table]:
    """A listed table as GetPublicationRelations names it: a partitioned table as itself
    (PUBLICATION_PART_ROOT) or as its leaf partitions (PUBLICATION_PART_LEAF)."""
    if table.relkind == "p" and not via_root:
        return list(scenario.leaves(table))
    return [table]


def publication_tables(scenario: Scenario, pub: Publication, major: int) -> list[PubTable]:
    rels: list[Table] = []
    if pub.all_tables:
        for t in scenario.tables:
            if pub.via_root:
                if t.partition_of is None:
                    rels.append(t)
            elif t.relkind == "r":
                rels.append(t)
    else:
        for t in scenario.tables:
            if pub.lists(t.qualified_name) or pub.in_schema(t.qualified_name):
                rels.extend(x for x in _expand(scenario, t, pub.via_root)
                            if x.qualified_name not in {r.qualified_name for r in rels})
        if pub.via_root:
            # filter_partitions: a partition whose ancestor is in the list goes
            names = {r.qualified_name for r in rels}
            rels = [t for t in rels if not any(a.qualified_name in names for a in scenario.ancestors(t))]
    out = []
    for t in rels:
        entry = pub.entry(t.qualified_name)
        attrs: tuple[int, ...] | None
        if entry is not None and entry.columns is not None:
            listed = set(entry.columns)
            attrs = tuple(i + 1 for i, c in enumerate(t.columns) if c.name in listed)
        elif not majors.major(major).publication_tables_attnames:
            attrs = None
        else:
            cols = published_columns(t, pub, major)
            attrs = tuple(i + 1 for i, c in enumerate(t.columns) if c in cols)
        out.append(PubTable(pub, t, attrs, entry.where if entry is not None else None))
    return out
