"""The request hook, and the owner of what is live: the plugin opens the
stores and clients a config describes and closes them.

- `request`: `Request` and `StepResult`, values, and `read_request`, which
  reads every body format the same way.
- `step`: the pure step, in named stages (what each stage does).
- `plugin`: `MemoryPlugin`, the public face, delegating to the objects below.
- `hook`: the driver: one request of a conversation, sync and async, and a
  body of any format through it.
- `body_formats`: the table of body formats (OpenAI chat, Responses,
  Anthropic), with `responses_hook`, `provider_bodies` (Anthropic bodies
  and provider-side context edits) and `body_shape` (a body handed to the
  wrong hook).
- `graph_ops`: each conversation's state and working graph in the store.
- `memory_endpoints`: retrieval memory around a request.
- `opening`: what a plugin opens, in order, and closes.
- `conversation_caches`: each conversation's memos.
"""
