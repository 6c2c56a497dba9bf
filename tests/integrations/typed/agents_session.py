"""Type-checked by tests/integrations/test_typed_integrations.py (not run):
a CompactingSession is what ``Runner.run(..., session=...)`` accepts."""

from __future__ import annotations

from agents import Agent, Runner, SQLiteSession
from agents.memory.session import Session

import memrules
from memrules.integrations.openai_agents import CompactingSession


async def main() -> None:
    pipeline = memrules.load_pipeline("configs/default.yaml")
    session: Session = CompactingSession(SQLiteSession("user-42"), pipeline)
    session.session_id = "user-43"
    agent = Agent(name="assistant")
    await Runner.run(
        agent, "next question", session=CompactingSession(SQLiteSession("u"), pipeline)
    )
    print(session.session_id)
