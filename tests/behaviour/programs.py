"""The programs of the behaviour suite, each in every form a front end can give it.

`FORMS[form][behaviour]` is a factory `(tmp_path) -> Program`. The forms are the ways a program
reaches the engine: `adl` (YAML source compiled by the ADL front end) and `builder` (built in
Python with `frontdesk.lang.build`). A new front end (ABL) adds its own dict under its name; the
tests run every behaviour in every form, and skip a behaviour a form does not define yet.

A factory may write files into `tmp_path` beside the program: Python tool files (`TOOLS`), and for
ADL a `config.yml` with the program's settings, which the builder form sets on `program.settings`.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

from frontdesk.lang import build as b
from frontdesk.ir.models import Policy, Program, ToolDef, ToolLimits
from frontdesk.lang import load_program

Factory = Callable[[Path], Program]

# ---- shared pieces -------------------------------------------------------------------------------

# The tool file of the `tool_errors` behaviour, in both forms.
TOOLS = '''
import time


def explode():
    """Always raises."""
    raise ValueError("database down")


def slow():
    """Answers long after its time limit."""
    time.sleep(3)
    return [{"status": "success", "msg": "too late"}]


def refuse():
    """Returns an error status."""
    return [{"status": "error", "msg": "card declined"}]


def fine(item: str):
    """Works."""
    return [{"status": "success", "msg": "reserved " + item}, {"arg": "ref", "value": "R-7"}]
'''
TOOL_NAMES = ("explode", "slow", "refuse", "fine")
SLOW_TIMEOUT = 0.3  # seconds: the `slow` tool's own limit, from the program's tool settings

FALLBACK_TEXT = "Please answer yes or no."
MAX_FALLBACKS = 2  # the programs' `max_consecutive_fallbacks` setting


def _adl(tmp_path: Path, source: str, files: dict[str, str] | None = None) -> Program:
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(textwrap.dedent(text), encoding="utf-8")
    (tmp_path / "agents.yml").write_text(textwrap.dedent(source), encoding="utf-8")
    program, diagnostics = load_program(tmp_path)
    errors = [d.format() for d in diagnostics if d.is_error]
    assert program is not None and not errors, errors
    return program


# ---- routing -------------------------------------------------------------------------------------

DESK_ADL = """
main:
  type: flow agent
  steps:
    - call: desk

desk:
  type: ensemble agent
  description: The bank's front desk.
  contains: [billing, weather]
  steps:
    - bot: "Hello, how can I help?"

billing:
  type: flow agent
  description: Answers questions about invoices.
  steps:
    - bot: "Billing here. Which invoice?"
    - user
    - bot: "Invoice noted."

weather:
  type: flow agent
  description: Tells the weather.
  steps:
    - bot: "Sunny today."
"""


def routing_adl(tmp_path: Path) -> Program:
    return _adl(tmp_path, DESK_ADL)


def routing_builder(tmp_path: Path) -> Program:
    return b.program(
        b.flow("main", [b.call("desk")]),
        b.router("desk", ["billing", "weather"], description="The bank's front desk.",
                 setup=[b.say("Hello, how can I help?")]),
        b.flow("billing", [b.say("Billing here. Which invoice?"), b.listen(), b.say("Invoice noted.")],
               description="Answers questions about invoices."),
        b.flow("weather", [b.say("Sunny today.")], description="Tells the weather."),
        root=str(tmp_path),
    )


# ---- suspend and resume --------------------------------------------------------------------------

TRANSFER_ADL = """
main:
  type: flow agent
  steps:
    - call: desk

desk:
  type: ensemble agent
  description: The bank's front desk.
  contains: [transfer, hours]
  steps:
    - bot: "Hello, how can I help?"

transfer:
  type: flow agent
  description: Sends money to someone.
  args: [recipient, amount]
  steps:
    - bot: "Who should receive the money?"
    - user
    - bot: "How much should ${recipient} get?"
    - user
    - bot: "Send ${amount} to ${recipient}?"
    - user
    - if: the user claims "Yes, send it"
      then:
        - bot: "Sent ${transfer.amount} to ${recipient}."
      else:
        - bot: "Transfer cancelled."

hours:
  type: flow agent
  description: Tells the opening hours.
  steps:
    - bot: "We open at 9."
"""


def suspend_resume_adl(tmp_path: Path) -> Program:
    return _adl(tmp_path, TRANSFER_ADL)


def suspend_resume_builder(tmp_path: Path) -> Program:
    return b.program(
        b.flow("main", [b.call("desk")]),
        b.router("desk", ["transfer", "hours"], description="The bank's front desk.",
                 setup=[b.say("Hello, how can I help?")]),
        b.flow("transfer", [
            b.say("Who should receive the money?"),
            b.listen(),
            b.say("How much should ${recipient} get?"),
            b.listen(),
            b.say("Send ${amount} to ${recipient}?"),
            b.listen(),
            b.branch((b.claims("Yes, send it"), [b.say("Sent ${transfer.amount} to ${recipient}.")]),
                     otherwise=[b.say("Transfer cancelled.")]),
        ], description="Sends money to someone.", args=["recipient", "amount"]),
        b.flow("hours", [b.say("We open at 9.")], description="Tells the opening hours."),
        root=str(tmp_path),
    )


# ---- call and return -----------------------------------------------------------------------------

CALLS_ADL = """
main:
  type: flow agent
  args: [discount]
  steps:
    - begin
    - call: verify
      args:
        code: "A1"
    - if: verify.success
      then:
        - bot: "Verified ${verify.code} (status ${verify.status})."
      else:
        - bot: "Not verified."
    - call: verify
      args:
        code: "ZZ"
    - if: verify.error
      then:
        - bot: "Rejected: ${verify.message}."
      else:
        - bot: "Accepted ZZ."
    - call: get_discount
    - if: get_discount.success
      then:
        - bot: "Discount ${discount}."
    - call: no_discount
    - if: no_discount.error
      then:
        - bot: "No second discount: ${no_discount.message}."
    - bot: "Done."
    - end
    - begin: get_discount
    - set:
        discount: "10%"
    - return: success, discount found
    - end
    - begin: no_discount
    - return: error, already used
    - bot: "never said"
    - end

verify:
  type: flow agent
  description: Checks a code.
  args: [code]
  steps:
    - if: code == "A1"
      then:
        - return: success
    - return: error, unknown code
"""


def call_return_adl(tmp_path: Path) -> Program:
    return _adl(tmp_path, CALLS_ADL)


def call_return_builder(tmp_path: Path) -> Program:
    return b.program(
        b.flow("main", [
            b.call("verify", code='"A1"'),
            b.branch(("verify.success", [b.say("Verified ${verify.code} (status ${verify.status}).")]),
                     otherwise=[b.say("Not verified.")]),
            b.call("verify", code='"ZZ"'),
            b.branch(("verify.error", [b.say("Rejected: ${verify.message}.")]), otherwise=[b.say("Accepted ZZ.")]),
            b.call("get_discount", "subflow"),
            b.branch(("get_discount.success", [b.say("Discount ${discount}.")])),
            b.call("no_discount", "subflow"),
            b.branch(("no_discount.error", [b.say("No second discount: ${no_discount.message}.")])),
            b.say("Done."),
        ], args=["discount"], subflows={
            "get_discount": [b.set_(discount='"10%"'), b.ret("success", "discount found")],
            "no_discount": [b.ret("error", "already used"), b.say("never said")],
        }),
        b.flow("verify", [
            b.branch(('code == "A1"', [b.ret()])),
            b.ret("error", "unknown code"),
        ], description="Checks a code.", args=["code"]),
        root=str(tmp_path),
    )


# ---- tool errors ---------------------------------------------------------------------------------

TOOL_FLOW_ADL = """
main:
  type: flow agent
  steps:
    - call: explode
    - if: explode.error
      then:
        - bot: "explode failed: ${explode.message}"
    - call: slow
    - if: slow.error
      then:
        - bot: "slow failed: ${slow.message}"
    - call: refuse
    - if: refuse.status == "error"
      then:
        - bot: "refuse failed: ${refuse.message}"
    - call: fine
      args:
        item: "a kettle"
    - if: fine.success
      then:
        - bot: "fine: ${fine.message}, ref ${fine.ref}"
      else:
        - bot: "fine failed: ${fine.message}"
    - bot: "Still here. Anything else?"
    - user
    - bot: "Bye."
"""


def _tool_steps() -> list:
    return [
        b.call("explode", "tool"),
        b.branch(("explode.error", [b.say("explode failed: ${explode.message}")])),
        b.call("slow", "tool"),
        b.branch(("slow.error", [b.say("slow failed: ${slow.message}")])),
        b.call("refuse", "tool"),
        b.branch(('refuse.status == "error"', [b.say("refuse failed: ${refuse.message}")])),
        b.call("fine", "tool", item='"a kettle"'),
        b.branch(("fine.success", [b.say("fine: ${fine.message}, ref ${fine.ref}")]),
                 otherwise=[b.say("fine failed: ${fine.message}")]),
        b.say("Still here. Anything else?"),
        b.listen(),
        b.say("Bye."),
    ]


def tool_errors_adl(tmp_path: Path) -> Program:
    config = f"tools:\n  slow:\n    timeout: {SLOW_TIMEOUT}\n"
    return _adl(tmp_path, TOOL_FLOW_ADL, {"tools.py": TOOLS, "config.yml": config})


def tool_errors_builder(tmp_path: Path) -> Program:
    (tmp_path / "tools.py").write_text(TOOLS, encoding="utf-8")
    program = b.program(b.flow("main", _tool_steps()), root=str(tmp_path),
                        tools=[ToolDef(name=name, module="tools.py") for name in TOOL_NAMES])
    program.settings.tools.per_tool["slow"] = ToolLimits(timeout=SLOW_TIMEOUT)
    return program


def stub_tools_adl(tmp_path: Path) -> Program:
    """The same flow with no tool file: the tools are whatever the engine's tool runner answers."""
    return _adl(tmp_path, TOOL_FLOW_ADL)


def stub_tools_builder(tmp_path: Path) -> Program:
    return b.program(b.flow("main", _tool_steps()), root=str(tmp_path))


# ---- fallbacks -----------------------------------------------------------------------------------

FALLBACK_ADL = """
main:
  type: flow agent
  steps:
    - call: asker
    - if: asker.error
      then:
        - bot: "asker gave up: ${asker.message}"
      else:
        - bot: "asker done"

asker:
  type: flow agent
  description: Asks whether to go on.
  fallback: FALLBACK
  steps:
    - bot: "Shall I go on?"
    - user
    - if: the user claims "Yes, go on"
      then:
        - bot: "Going on."
    - else if: the user claims "No, stop"
      then:
        - bot: "Stopping."
HELPER
"""

HELPDESK_ADL = """
helpdesk:
  type: flow agent
  description: Explains how to answer.
  steps:
    - bot: "Just say yes or no, please."
"""


def _fallback_adl(tmp_path: Path, fallback: str, helper: str) -> Program:
    source = textwrap.dedent(FALLBACK_ADL).replace("FALLBACK", fallback).replace("HELPER", textwrap.dedent(helper))
    return _adl(tmp_path, source, {"config.yml": f"max_consecutive_fallbacks: {MAX_FALLBACKS}\n"})


def fallback_text_adl(tmp_path: Path) -> Program:
    return _fallback_adl(tmp_path, f"'Reply with \"{FALLBACK_TEXT}\"'", "")


def fallback_agent_adl(tmp_path: Path) -> Program:
    return _fallback_adl(tmp_path, "helpdesk", HELPDESK_ADL)


def _fallback_builder(tmp_path: Path, fallback: str, *extra) -> Program:
    program = b.program(
        b.flow("main", [
            b.call("asker"),
            b.branch(("asker.error", [b.say("asker gave up: ${asker.message}")]), otherwise=[b.say("asker done")]),
        ]),
        b.flow("asker", [
            b.say("Shall I go on?"),
            b.listen(),
            b.branch((b.claims("Yes, go on"), [b.say("Going on.")]),
                     (b.claims("No, stop"), [b.say("Stopping.")])),
        ], description="Asks whether to go on.", fallback=fallback),
        *extra,
        root=str(tmp_path),
    )
    program.settings.max_consecutive_fallbacks = MAX_FALLBACKS
    return program


def fallback_text_builder(tmp_path: Path) -> Program:
    return _fallback_builder(tmp_path, f'Reply with "{FALLBACK_TEXT}"')


def fallback_agent_builder(tmp_path: Path) -> Program:
    return _fallback_builder(tmp_path, "@helpdesk",
                             b.flow("helpdesk", [b.say("Just say yes or no, please.")],
                                    description="Explains how to answer."))


# ---- tries ---------------------------------------------------------------------------------------

TRIES_ADL = """
main:
  type: flow agent
  steps:
    - label: again
    - bot: "Enter the code."
    - user
    - next: again
      tries: 2
    - bot: "Too many attempts."
    - call: stubborn
    - if: stubborn.error
      then:
        - bot: "stubborn ended with an error: ${stubborn.message}"

stubborn:
  type: flow agent
  description: Asks again, and has nothing to do when the tries run out.
  fallback: 'Say "I give up."'
  steps:
    - label: top
    - bot: "Once more?"
    - user
    - next: top
      tries: 1
"""


def tries_adl(tmp_path: Path) -> Program:
    return _adl(tmp_path, TRIES_ADL)


def tries_builder(tmp_path: Path) -> Program:
    return b.program(
        b.flow("main", [
            b.label("again"),
            b.say("Enter the code."),
            b.listen(),
            b.goto("again", tries=2),
            b.say("Too many attempts."),
            b.call("stubborn"),
            b.branch(("stubborn.error", [b.say("stubborn ended with an error: ${stubborn.message}")])),
        ]),
        b.flow("stubborn", [b.label("top"), b.say("Once more?"), b.listen(), b.goto("top", tries=1)],
               description="Asks again, and has nothing to do when the tries run out.",
               fallback='Say "I give up."'),
        root=str(tmp_path),
    )


# ---- exit policy and session end -----------------------------------------------------------------

EXIT_ADL = """
main:
  type: flow agent
  steps:
    - bot: "Welcome."
    - user
    - call: order
      args:
        ok: "yes"
    - call: order
      args:
        ok: "no"
    - bot: "Main is done (last order: ${order.status})."

order:
  type: flow agent
  description: Places an order.
  args: [ok]
  exit: goodbye
  steps:
    - if: ok == "yes"
      then:
        - bot: "Order placed."
      else:
        - return: error, order refused

goodbye:
  type: flow agent
  description: Says goodbye.
  steps:
    - bot: "Thanks for your order!"
"""


def exit_end_adl(tmp_path: Path) -> Program:
    return _adl(tmp_path, EXIT_ADL)


def exit_end_builder(tmp_path: Path) -> Program:
    program = b.program(
        b.flow("main", [
            b.say("Welcome."),
            b.listen(),
            b.call("order", ok='"yes"'),
            b.call("order", ok='"no"'),
            b.say("Main is done (last order: ${order.status})."),
        ]),
        b.flow("order", [
            b.branch(('ok == "yes"', [b.say("Order placed.")]), otherwise=[b.ret("error", "order refused")]),
        ], description="Places an order.", args=["ok"]),
        b.flow("goodbye", [b.say("Thanks for your order!")], description="Says goodbye."),
        root=str(tmp_path),
    )
    program.agents["order"].exit = Policy(kind="agent", value="goodbye")
    return program


MAIN_EXIT_ADL = """
main:
  type: flow agent
  exit: goodbye
  steps:
    - bot: "Hello."

goodbye:
  type: flow agent
  description: Says goodbye.
  steps:
    - bot: "Thanks for your order!"
"""


def main_exit_adl(tmp_path: Path) -> Program:
    return _adl(tmp_path, MAIN_EXIT_ADL)


def main_exit_builder(tmp_path: Path) -> Program:
    program = b.program(b.flow("main", [b.say("Hello.")]),
                        b.flow("goodbye", [b.say("Thanks for your order!")], description="Says goodbye."),
                        root=str(tmp_path))
    program.agents["main"].exit = Policy(kind="agent", value="goodbye")
    return program


# ---- interpolation -------------------------------------------------------------------------------

INTERPOLATION_ADL = """
main:
  type: flow agent
  args: [name, books]
  steps:
    - set:
        name: "Ada"
        books: ["Dune", "Emma", "Ulysses"]
    - call: profile
    - bot: "Hello ${name}, you live in ${profile.city}; zip ${profile.zip}."
    - bot: "Your books: ${books}. Again: ${main.books}."
    - bot: "What next, ${main.name}?"
    - user
    - bot: "Bye ${name}."

profile:
  type: flow agent
  description: Keeps the user's profile.
  args: [city, zip]
  steps:
    - set:
        city: "Paris"
    - bot: "Profile of ${main.name} in ${city}."
"""


def interpolation_adl(tmp_path: Path) -> Program:
    return _adl(tmp_path, INTERPOLATION_ADL)


def interpolation_builder(tmp_path: Path) -> Program:
    return b.program(
        b.flow("main", [
            b.set_(name='"Ada"', books='["Dune", "Emma", "Ulysses"]'),
            b.call("profile"),
            b.say("Hello ${name}, you live in ${profile.city}; zip ${profile.zip}."),
            b.say("Your books: ${books}. Again: ${main.books}."),
            b.say("What next, ${main.name}?"),
            b.listen(),
            b.say("Bye ${name}."),
        ], args=["name", "books"]),
        b.flow("profile", [b.set_(city='"Paris"'), b.say("Profile of ${main.name} in ${city}.")],
               description="Keeps the user's profile.", args=["city", "zip"]),
        root=str(tmp_path),
    )


# ---- threads: handoffs that come back, delegation (no ADL syntax: ABL gives these forms) ----------


def handoff_return_builder(tmp_path: Path) -> Program:
    return b.program(
        b.flow("main", [b.call("desk")]),
        b.router("desk", ["booking", "hours"], setup=[b.say("Hello.")]),
        b.flow("booking", [
            b.say("Which date?"), b.listen(),
            b.set_(date='"Friday"'),
            b.handoff("payment", resume=True, amount="120"),
            b.say("Booked for ${date}, paid: ${payment.paid}."),
            b.ret("success"),
        ], description="Books a room.", args=["date"]),
        b.flow("payment", [
            b.say("Pay ${amount}? (yes/no)"), b.listen(),
            b.set_(paid="True"),
            b.ret("success"),
        ], description="Takes payments.", args=["amount", "paid"]),
        b.flow("hours", [b.say("We open at 9."), b.ret("success")], description="Opening hours."),
        root=str(tmp_path),
    )


def delegation_builder(tmp_path: Path) -> Program:
    return b.program(
        b.reasoning("main", "Answer questions about orders.", args=["order_id"],
                    delegates=[("lookup", ["order_id"])]),
        b.flow("lookup", [b.set_(state='"shipped"'), b.ret("success")], args=["order_id", "state"]),
        root=str(tmp_path),
    )


# ---- the registry --------------------------------------------------------------------------------

FORMS: dict[str, dict[str, Factory]] = {
    "adl": {
        "routing": routing_adl,
        "suspend_resume": suspend_resume_adl,
        "call_return": call_return_adl,
        "tool_errors": tool_errors_adl,
        "stub_tools": stub_tools_adl,
        "fallback_text": fallback_text_adl,
        "fallback_agent": fallback_agent_adl,
        "tries": tries_adl,
        "exit_end": exit_end_adl,
        "main_exit": main_exit_adl,
        "interpolation": interpolation_adl,
    },
    "builder": {
        "routing": routing_builder,
        "suspend_resume": suspend_resume_builder,
        "call_return": call_return_builder,
        "tool_errors": tool_errors_builder,
        "stub_tools": stub_tools_builder,
        "fallback_text": fallback_text_builder,
        "fallback_agent": fallback_agent_builder,
        "tries": tries_builder,
        "exit_end": exit_end_builder,
        "main_exit": main_exit_builder,
        "interpolation": interpolation_builder,
        "handoff_return": handoff_return_builder,
        "delegation": delegation_builder,
    },
}
BEHAVIOURS = sorted({name for programs in FORMS.values() for name in programs})
