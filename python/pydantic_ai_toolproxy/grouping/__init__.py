"""Grouping: how the tools of a group's sources become members of the proxy (internal; no public names).

- `names`: canonical names `{group}__{tool}`, the one place that builds and splits them; MCP servers' group ids;
- `members`: member registration (`GroupSourceCapability`, `GroupMemberToolset`): renamed, withheld, unsupported
  members left out; the call control's `Dispatch`;
- `member_listing`: whether a source listed the same tools as last step (its members' renamed copies reused);
- `directory`: the step's grouped directory (`Directory`, `Member`, `DirectoryCache`) and `index_record`, the one
  record builder of the search index.
"""
