"""Conversation tests: YAML files of user turns and what the bot must do, run through the whole turn engine.

- `model`: the file format, read with positions; a bad file gives diagnostics at file:line:column;
- `checks`: the assertions of a turn (bot text exact, contained, by regex or by meaning; active agent;
  arguments; tools called; events);
- `runner`: plays a case (scripted model answers, stubbed tools, fixtures, a fixed day) and checks it;
- `report`: the terminal report and JUnit XML; `cli`: `frontdesk test`; `pytest_plugin`: each case
  a pytest item; `rasa`: Rasa end-to-end test files converted to this format.

The format is described in docs/testing.md. Nothing is imported here, so `frontdesk --help` stays fast.
"""
