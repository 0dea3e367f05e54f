"""Controls: what the model sees and calls (internal; no public names).

- `surface`: `ProxySurfaceToolset`, one toolset holding the members and the two controls;
- `toolset`: `ControlToolset`, the two control tools and the schemas advertised for them each step;
- `request`: what one model request offers: members hidden, the controls advertised with the step's groups;
- `search`: the search control's ranked, byte-budgeted pages;
- `call`: the call control: resolution against the step's directory and dispatch through `ctx.tool_manager`;
- `unknown`: short retries for calls of tool names that do not exist;
- `instructions`: the controls' descriptions and the generated guidance;
- `spans`: `toolproxy.*` attributes on the controls' spans.

Every model-facing text's bounds and shared hints are in `.._messages` (the grouping uses them too).
"""
