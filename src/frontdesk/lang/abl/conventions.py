"""ABL's dialogue conventions, made explicit in the IR so the runtime needs none of them.

Every agent an ABL project compiles to carries a `DialoguePolicy` (ir/models.py) that says what ABL
means where it differs from the runtime's plain behaviour (docs/abl-semantics.md, "What the IR
carries"):

- a GATHER question the flow comes back to asks only for what is still missing; values read from an
  answer are validated (unreadable answers are told what is expected), may be corrected later, and
  belong to one activation; an answer that gives nothing may be a digression to another member;
- with no model, flows understand what words and patterns can and reasoning agents work offline;
- a name an agent does not declare lives in the session's shared variables;
- handoffs carry their CONTEXT (summary, history); an agent handed the conversation with RETURN: true
  may give it back (`__return_to_parent__`); a supervisor tracks `handoff.completed`, ON_RETURN and
  COMPLETE;
- the runtime keeps ABL's system variables (8.8: match, user.sentiment, ...);
- flows stop after EXECUTION max_flow_iterations step transitions (100 by default, spec 7.11);
- the agents' rules ride the turn pipeline, and traces name GATHER events.

A FLOW step's reasoning agent (`<Agent>__<step>`) acts under its flow agent's rules (`owner`); its
handoffs carry no CONTEXT of their own and offer no way back (as the runtime has always run them).
"""

from __future__ import annotations

from frontdesk.ir.behaviour import AgentRules
from frontdesk.ir.models import DialoguePolicy, Program, ReasoningAgent

from .context import SESSION

ABL_MAX_FLOW_ITERATIONS = 100  # EXECUTION max_flow_iterations when not given (abl-specification 7.11)


def abl_policy(rules: AgentRules) -> DialoguePolicy:
    """The policy of an ABL agent that declares `rules`."""
    return DialoguePolicy(
        reask="missing", corrections=True, checks_answers=True, digressions=True, offline_understanding=True,
        system_variables=True, fresh_activation=True,
        step_limit=rules.execution.max_flow_iterations or ABL_MAX_FLOW_ITERATIONS,
        unbound_scope=SESSION, handoff_context=True, offers_return=True, tracks_completion=True,
        prompt="sections", rules_hook=True, gather_events=True,
        args_from_messages=False)  # a question reads its GATHER fields (ListenNode.extracts), by their types


def apply_abl_conventions(program: Program) -> Program:
    """Fill (in place) every agent's policy with ABL's meaning; a FLOW step's reasoning agent takes its
    flow agent's, but for what its own handoffs carry."""
    for agent in program.agents.values():
        owner = program.agents.get(agent.owner) if isinstance(agent, ReasoningAgent) and agent.owner else None
        policy = abl_policy(owner.rules if owner is not None else agent.rules)
        if owner is not None:
            policy.handoff_context = policy.offers_return = policy.tracks_completion = False
        agent.policy = policy
    return program
