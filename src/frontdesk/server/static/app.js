/* Frontdesk web chat and trace viewer.
 *
 * Talks to the HTTP API (/v1) with the user's bearer token (kept in localStorage). A message is sent
 * with ?stream=true and its server-sent events are read from fetch's ReadableStream (EventSource cannot
 * send an Authorization header); GET /v1/sessions/{id}/stream is followed in the background so turns
 * the page did not start (server-initiated messages, other clients) show up too.
 *
 * Safety: every piece of bot, user or event text goes into the page through textContent (the el()
 * helper below makes text nodes); nothing is ever assigned to innerHTML.
 */
"use strict";

(function () {
  const TOKEN_KEY = "frontdesk.token";
  const PROGRAM_KEY = "frontdesk.program";
  const SESSION_KEY = "frontdesk.session";
  const RESTORED_TURNS = 50;  // turns shown again after a reload (older ones stay on the server)

  // Events shown by default in the trace; the rest appear with "show every event".
  const KEY_EVENTS = new Set([
    "session_started", "session_ended", "user_message", "bot_message",
    "execution.started", "execution.completed",
    "route_decided", "agent_chosen", "handoff_match", "handoff_context", "handoff_completed",
    "agent_started", "agent_finished", "agent_suspended", "agent_resumed", "agent_dropped",
    "condition_evaluated", "condition",
    "tool_call", "tool_called", "tool_result", "tool_intercepted", "tool_confirmation_requested",
    "tool_confirmation_answered", "llm_call",
    "flow_transition", "gather_extraction", "gather_validation", "gather_correction",
    "constraint_check", "constraint_action", "guardrail_check", "guardrail_action",
    "error", "warning", "fallback", "escalated", "session_escalated", "memory_recall",
    "knowledge_progress", "fan_out.started", "fan_out.completed", "output_changed", "input_blocked",
    "guardrail_verdict", "draft",
  ]);

  const CATEGORY = {
    user_message: "message", bot_message: "message",
    route_decided: "routing", agent_chosen: "routing", handoff_match: "routing", handoff_context: "routing",
    handoff_completed: "routing", agent_started: "routing", agent_finished: "routing",
    agent_suspended: "routing", agent_resumed: "routing", agent_dropped: "routing", thread_return: "routing",
    condition_evaluated: "condition", condition: "condition", constraint_check: "condition",
    guardrail_check: "condition", guardrail_verdict: "condition", draft: "routing",
    tool_call: "tool", tool_called: "tool", tool_result: "tool", tool_intercepted: "tool",
    tool_confirmation_requested: "tool", tool_confirmation_answered: "tool",
    llm_call: "llm",
    flow_transition: "flow", gather_extraction: "flow", gather_validation: "flow", gather_correction: "flow",
    args_extracted: "flow", arg_set: "flow", step: "flow", jump: "flow",
    error: "error", warning: "error", fallback: "error", constraint_action: "error", guardrail_action: "error",
    "execution.started": "exec", "execution.completed": "exec", session_started: "exec", session_ended: "exec",
  };

  const $ = (id) => document.getElementById(id);
  const ui = {
    tokenForm: $("token-form"), tokenInput: $("token-input"), tokenForget: $("token-forget"),
    startForm: $("start-form"), programSelect: $("program-select"), startButton: $("start-button"),
    notice: $("notice"), noticeText: $("notice-text"), noticeClose: $("notice-close"),
    title: $("chat-title"), sub: $("chat-sub"), status: $("status"), log: $("log"),
    composer: $("composer"), input: $("message-input"), sendButton: $("send-button"),
    trace: $("trace-panel"), traceTitle: $("trace-title"), traceSub: $("trace-sub"), traceClose: $("trace-close"),
    traceAll: $("trace-all"), traceSummary: $("trace-summary"), traceList: $("trace-list"),
  };

  const S = {
    token: localStorage.getItem(TOKEN_KEY) || "",
    session: null,          // {id, program, ended, activeAgent}
    pending: false,         // a message of this page is being answered
    turns: new Map(),       // turn number -> its events (turns shown in the log)
    follow: null,           // {controller, sessionId, buffer: Map(turn -> events), done: Set(turn)}
    openTurn: null,         // the turn shown in the trace panel
  };

  // ---- DOM helpers: text only ------------------------------------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "dataset") Object.assign(node.dataset, value);
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function scrollLog() {
    ui.log.scrollTop = ui.log.scrollHeight;
  }

  // ---- notices ---------------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, error, detail) {
      super(error || "request failed");
      this.status = status;
      this.detail = detail;
    }
  }

  function describeDetail(detail) {
    if (detail === undefined || detail === null || detail === "") return "";
    if (typeof detail === "string") return detail;
    if (Array.isArray(detail)) {
      return detail.map((d) => (d && typeof d === "object" && "problem" in d)
        ? `${d.where ? d.where + ": " : ""}${d.problem}` : JSON.stringify(d)).join("; ");
    }
    try { return JSON.stringify(detail); } catch (e) { return String(detail); }
  }

  function showError(err) {
    const status = err && err.status ? ` (HTTP ${err.status})` : "";
    const detail = err instanceof ApiError ? describeDetail(err.detail) : "";
    let text = `${err && err.message ? err.message : String(err)}${status}`;
    if (detail) text += ` — ${detail}`;
    if (err && err.status === 401) text += ". Check the API token.";
    ui.noticeText.textContent = text;
    ui.notice.hidden = false;
  }

  function hideNotice() {
    ui.notice.hidden = true;
    ui.noticeText.textContent = "";
  }

  // ---- the API ---------------------------------------------------------------------------------

  function headers(json) {
    const h = { "Authorization": `Bearer ${S.token}` };
    if (json) h["Content-Type"] = "application/json";
    return h;
  }

  async function errorOf(resp) {
    let body = null;
    try { body = await resp.json(); } catch (e) { /* not JSON */ }
    const error = body && typeof body === "object" && body.error ? body.error : (resp.statusText || "request failed");
    return new ApiError(resp.status, error, body && typeof body === "object" ? body.detail : null);
  }

  async function api(method, path, body, signal) {
    let resp;
    try {
      resp = await fetch(path, {
        method, headers: headers(body !== undefined), signal,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (e) {
      if (e && e.name === "AbortError") throw e;
      throw new ApiError(0, "the server cannot be reached", String(e && e.message ? e.message : e));
    }
    if (!resp.ok) throw await errorOf(resp);
    return resp;
  }

  /* Server-sent events from a fetch response: yields {event, data} (data parsed as JSON when it is),
   * and {event: "comment"} for comment lines (the follow stream starts with one). */
  async function* readSSE(resp) {
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    const blocks = function* (final) {
      buffer = buffer.replace(/\r\n/g, "\n").replace(/\r(?!$)/g, "\n");
      let at;
      while ((at = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        const parsed = parseBlock(block);
        if (parsed) yield parsed;
      }
      if (final && buffer.trim()) {
        const parsed = parseBlock(buffer);
        buffer = "";
        if (parsed) yield parsed;
      }
    };
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        yield* blocks(false);
      }
      buffer += decoder.decode();
      yield* blocks(true);
    } finally {
      try { reader.releaseLock(); } catch (e) { /* already released */ }
    }
  }

  function parseBlock(block) {
    let event = "message";
    const data = [];
    let comment = false;
    for (const line of block.split("\n")) {
      if (line === "") continue;
      if (line.startsWith(":")) { comment = true; continue; }
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
    }
    if (!data.length) return comment ? { event: "comment", data: null } : null;
    const text = data.join("\n");
    let parsed = text;
    try { parsed = JSON.parse(text); } catch (e) { /* plain text */ }
    return { event, data: parsed };
  }

  function messageId() {
    if (window.crypto && typeof window.crypto.randomUUID === "function") return window.crypto.randomUUID();
    return `web-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
  }

  // ---- token and programs ----------------------------------------------------------------------

  function showTokenState() {
    ui.tokenForget.hidden = !S.token;
    ui.tokenInput.value = S.token;
    document.body.dataset.token = S.token ? "set" : "none";
  }

  async function loadPrograms() {
    ui.programSelect.disabled = true;
    ui.startButton.disabled = true;
    if (!S.token) return false;
    let programs;
    try {
      programs = await (await api("GET", "/v1/programs")).json();
    } catch (err) {
      showError(err);
      clear(ui.programSelect);
      ui.programSelect.appendChild(el("option", { value: "" }, "—"));
      return false;
    }
    hideNotice();
    clear(ui.programSelect);
    const remembered = localStorage.getItem(PROGRAM_KEY);
    for (const p of programs) {
      const label = `${p.name} (${p.language}, ${p.agents.length} agent${p.agents.length === 1 ? "" : "s"})`;
      ui.programSelect.appendChild(el("option", { value: p.name, selected: p.name === remembered }, label));
    }
    if (!programs.length) ui.programSelect.appendChild(el("option", { value: "" }, "no programs loaded"));
    ui.programSelect.disabled = !programs.length;
    ui.startButton.disabled = !programs.length;
    document.body.dataset.programs = String(programs.length);
    return programs.length > 0;
  }

  // ---- the conversation log --------------------------------------------------------------------

  function setComposer(enabled) {
    ui.input.disabled = !enabled;
    ui.sendButton.disabled = !enabled;
    if (enabled) ui.input.focus();
  }

  function setHeader() {
    const s = S.session;
    if (!s) {
      ui.title.textContent = "No conversation";
      ui.sub.textContent = "Paste a token, pick a program and start a conversation.";
      return;
    }
    ui.title.textContent = s.program;
    const who = s.activeAgent ? ` · with ${s.activeAgent}` : "";
    ui.sub.textContent = `Session ${s.id}${s.ended ? " · ended" : who}`;
  }

  function setStatus() {
    const s = S.session;
    ui.status.className = "status";
    if (!s) { ui.status.textContent = ""; return; }
    if (s.ended) { ui.status.textContent = "ended"; ui.status.classList.add("ended"); return; }
    const live = document.body.dataset.following === "true";
    ui.status.textContent = live ? "live" : "connecting…";
    ui.status.classList.add(live ? "live" : "idle");
  }

  function addUser(text, foreign) {
    const item = el("li", { class: `msg user${foreign ? " foreign" : ""}` },
      foreign ? el("div", { class: "who" }, "user (another client)") : null,
      el("div", { class: "bubble" }, text));
    ui.log.appendChild(item);
    scrollLog();
    return item;
  }

  function addNote(text) {
    const item = el("li", { class: "note" }, el("span", {}, text));
    ui.log.appendChild(item);
    return item;
  }

  function addBot(message, options) {
    const opts = options || {};
    const agent = message.agent || "bot";
    const item = el("li", { class: `msg bot${opts.provisional ? " provisional" : ""}`, dataset: { agent } },
      el("div", { class: "who" }, el("span", { class: "avatar", "aria-hidden": "true" }, agent.slice(0, 1).toUpperCase()),
        el("span", { class: "agent-name" }, agent)),
      el("div", { class: "bubble" }, message.text));
    const actions = Array.isArray(message.actions) ? message.actions : [];
    if (actions.length && !opts.provisional) item.appendChild(renderActions(actions));
    ui.log.appendChild(item);
    scrollLog();
    return item;
  }

  function renderActions(actions) {
    const box = el("div", { class: "actions" });
    for (const a of actions) {
      if (!a || typeof a !== "object") continue;
      const label = a.label || a.id || "";
      if (a.kind === "button") {
        const text = a.send !== undefined && a.send !== null ? String(a.send)
          : (a.value !== undefined && a.value !== null ? String(a.value) : String(a.id || label));
        box.appendChild(el("button", {
          type: "button", class: "action-button", dataset: { actionId: a.id || "" },
          onclick: () => send(text),
        }, label));
      } else if (a.kind === "select") {
        const select = el("select", { class: "action-select", "aria-label": label, dataset: { actionId: a.id || "" } },
          el("option", { value: "", disabled: true, selected: true }, `${label}…`));
        for (const o of a.options || []) {
          const id = o && typeof o === "object" ? o.id : o;
          const text = o && typeof o === "object" ? (o.label || o.id) : o;
          select.appendChild(el("option", { value: String(id) }, String(text)));
        }
        select.addEventListener("change", () => { if (select.value) send(select.value); });
        box.appendChild(el("label", { class: "action-field" }, el("span", {}, label), select));
      } else if (a.kind === "input") {
        const allowed = ["text", "number", "email", "tel", "date", "url"];
        const field = el("input", {
          type: allowed.includes(a.input_type) ? a.input_type : "text", class: "action-input",
          placeholder: a.placeholder || label, "aria-label": label, dataset: { actionId: a.id || "" },
        });
        const form = el("form", { class: "action-form" }, el("span", {}, label), field,
          el("button", { type: "submit", class: "action-button" }, "Send"));
        form.addEventListener("submit", (ev) => {
          ev.preventDefault();
          if (field.value.trim()) send(field.value);
        });
        box.appendChild(form);
      } else {
        box.appendChild(el("span", { class: "action-unknown" }, label));
      }
    }
    return box;
  }

  function retireActions() {
    for (const node of ui.log.querySelectorAll(".actions button, .actions select, .actions input")) {
      node.disabled = true;
    }
  }

  function addTyping() {
    const status = el("span", { class: "typing-status" }, "working…");
    const item = el("li", { class: "msg bot typing" },
      el("div", { class: "bubble" }, el("span", { class: "dots", "aria-hidden": "true" },
        el("i"), el("i"), el("i")), status));
    ui.log.appendChild(item);
    scrollLog();
    return { item, status };
  }

  function liveLabel(ev) {
    const d = ev.data || {};
    switch (ev.type) {
      case "tool_call": case "tool_called": return `calling ${d.tool}…`;
      case "llm_call": return "thinking…";
      case "agent_started": return `${ev.agent} is joining…`;
      case "route_decided": return d.agent ? `passing to ${d.agent}…` : "routing…";
      case "flow_transition": return `${ev.agent}: ${d.step}…`;
      default: return null;
    }
  }

  function turnDuration(events) {
    const times = events.map((e) => e.ts).filter((t) => typeof t === "number" && t > 0);
    if (times.length < 2) return null;
    return (Math.max(...times) - Math.min(...times)) * 1000;
  }

  function addTraceLink(turn, events) {
    const took = turnDuration(events);
    const bits = [`trace · turn ${turn}`, `${events.length} events`];
    if (took !== null) bits.push(formatMs(took));
    const button = el("button", {
      type: "button", class: "trace-link", dataset: { traceTurn: String(turn) },
      onclick: () => openTrace(turn),
    }, bits.join(" · "));
    ui.log.appendChild(el("li", { class: "turn-meta", dataset: { turn: String(turn) } }, button));
  }

  /* Notes about agents coming and going, from a turn's events. */
  function agentNote(ev) {
    const d = ev.data || {};
    if (ev.type === "agent_started" && typeof d.by === "string" && d.by.startsWith("handoff")) {
      return `${ev.agent} took over (${d.by})`;
    }
    if (ev.type === "agent_resumed") return `${ev.agent} is back (${d.by || "resumed"})`;
    if (ev.type === "escalated" || ev.type === "session_escalated") return "The conversation was passed to a person";
    return null;
  }

  /* Show a turn: its user message (when the page did not send it), notes and bot messages in the
   * order the events give, and the trace link. `messages` are the final ones (TurnOut); without them
   * the bot_message events are shown. */
  function renderTurn(turn, events, messages, foreign) {
    S.turns.set(turn, events);
    const bots = events.filter((e) => e.type === "bot_message");
    const finals = messages || bots.map((e) => ({
      agent: (e.data && e.data.shown_as) || e.agent, text: (e.data && e.data.text) || "",
      actions: (e.data && e.data.actions) || [],
    }));
    const interleave = finals.length === bots.length;
    let next = 0;
    for (const ev of events) {
      if (ev.type === "user_message" && foreign) addUser((ev.data && ev.data.text) || "", true);
      const note = agentNote(ev);
      if (note) addNote(note);
      if (ev.type === "bot_message" && interleave) addBot(finals[next++]);
    }
    if (!interleave) for (const m of finals) addBot(m);
    addTraceLink(turn, events);
    scrollLog();
  }

  function applyTurnOut(out) {
    if (!S.session || out.session_id !== S.session.id) return;
    S.session.activeAgent = out.active_agent || S.session.activeAgent;
    if (out.ended) endSession();
    setHeader();
    setStatus();
  }

  function endSession() {
    if (!S.session || S.session.ended) return;
    S.session.ended = true;
    setComposer(false);
    retireActions();
    addNote("The conversation has ended. Start a new one to chat again.");
    stopFollowing();
    document.body.dataset.ended = "true";
  }

  // ---- sending -----------------------------------------------------------------------------------

  async function send(text) {
    const s = S.session;
    if (!s || s.ended || S.pending || !String(text).trim()) return;
    hideNotice();
    retireActions();
    S.pending = true;
    document.body.dataset.busy = "true";
    setComposer(false);
    const userItem = addUser(text, false);
    const typing = addTyping();
    const provisional = [];
    const events = [];
    let result = null;
    try {
      const resp = await api("POST", `/v1/sessions/${encodeURIComponent(s.id)}/messages?stream=true`,
        { text, message_id: messageId() });
      for await (const item of readSSE(resp)) {
        if (item.event === "result") { result = item.data; continue; }
        if (item.event === "error") {
          const d = item.data || {};
          throw new ApiError(d.status || 0, d.error || "the turn failed", d.detail);
        }
        if (item.event === "comment" || !item.data || typeof item.data !== "object") continue;
        const ev = item.data;
        events.push(ev);
        const label = liveLabel(ev);
        if (label) typing.status.textContent = label;
        if (ev.type === "bot_message") {
          // shown at once; replaced by the turn's final messages when the result arrives
          provisional.push(addBot({ agent: (ev.data && ev.data.shown_as) || ev.agent, text: (ev.data && ev.data.text) || "" },
            { provisional: true }));
          ui.log.appendChild(typing.item);
        }
      }
      if (!result) throw new ApiError(0, "the reply stream ended before the turn's result", null);
    } catch (err) {
      showError(err);
      userItem.classList.add("failed");
      userItem.appendChild(el("div", { class: "failed-note" }, "not delivered"));
      if (!ui.input.value) ui.input.value = text;
    } finally {
      typing.item.remove();
      for (const p of provisional) p.remove();
      S.pending = false;
      document.body.dataset.busy = "false";
    }
    if (result && S.session === s) {
      renderTurn(result.turn, result.events && result.events.length ? result.events : events, result.messages, false);
      applyTurnOut(result);
      if (S.openTurn !== null) openTrace(result.turn);
    }
    if (S.session === s && !s.ended) setComposer(true);
    flushFollowed();
  }

  // ---- following the session (server-initiated turns) ------------------------------------------

  function stopFollowing() {
    if (S.follow) S.follow.controller.abort();
    S.follow = null;
    document.body.dataset.following = "false";
    setStatus();
  }

  async function follow(sessionId) {
    stopFollowing();
    const state = { controller: new AbortController(), sessionId, buffer: new Map(), done: new Set() };
    S.follow = state;
    let delay = 1000;
    while (S.follow === state && !state.controller.signal.aborted) {
      try {
        const resp = await api("GET", `/v1/sessions/${encodeURIComponent(sessionId)}/stream`, undefined,
          state.controller.signal);
        for await (const item of readSSE(resp)) {
          if (S.follow !== state) break;
          if (item.event === "comment") {
            document.body.dataset.following = "true";
            setStatus();
            continue;
          }
          delay = 1000;
          if (item.data && typeof item.data === "object") followed(state, item.data);
        }
      } catch (err) {
        if (state.controller.signal.aborted || S.follow !== state) break;
        if (err instanceof ApiError && err.status >= 400 && err.status < 500) {
          showError(err);
          break;
        }
      }
      if (S.follow !== state) break;
      document.body.dataset.following = "false";
      setStatus();
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 15000);
    }
  }

  function followed(state, ev) {
    if (typeof ev.turn !== "number" || S.turns.has(ev.turn)) return;
    if (!state.buffer.has(ev.turn)) state.buffer.set(ev.turn, []);
    state.buffer.get(ev.turn).push(ev);
    if (ev.type === "execution.completed") state.done.add(ev.turn);
    flushFollowed();
  }

  /* Show the followed turns that are complete and were not this page's own (those come back as the
   * result of the POST and are already shown). Waits while a message of the page is in flight. */
  function flushFollowed() {
    const state = S.follow;
    if (!state || S.pending) return;
    for (const turn of [...state.done].sort((a, b) => a - b)) {
      const events = state.buffer.get(turn) || [];
      state.done.delete(turn);
      state.buffer.delete(turn);
      if (S.turns.has(turn)) continue;
      renderTurn(turn, events, null, true);
      const completed = events.find((e) => e.type === "execution.completed");
      if (completed && completed.data && completed.data.status === "ended") endSession();
      const last = [...events].reverse().find((e) => e.type === "bot_message");
      if (last && S.session) S.session.activeAgent = last.agent || S.session.activeAgent;
      setHeader();
    }
  }

  // ---- sessions ----------------------------------------------------------------------------------

  function resetConversation() {
    stopFollowing();
    closeTrace();
    clear(ui.log);
    S.turns.clear();
    S.session = null;
    delete document.body.dataset.sessionId;
    delete document.body.dataset.ended;
    setComposer(false);
    setHeader();
    setStatus();
  }

  async function startSession(program) {
    if (!program || S.pending) return;
    hideNotice();
    ui.startButton.disabled = true;
    try {
      const out = await (await api("POST", "/v1/sessions", { program, channel: "web" })).json();
      resetConversation();
      S.session = { id: out.session_id, program, ended: false, activeAgent: out.active_agent };
      localStorage.setItem(PROGRAM_KEY, program);
      localStorage.setItem(SESSION_KEY, JSON.stringify({ id: out.session_id, program }));
      document.body.dataset.sessionId = out.session_id;
      setHeader();
      renderTurn(out.turn, out.events || [], out.messages, false);
      applyTurnOut(out);
      if (!S.session.ended) {
        setComposer(true);
        follow(out.session_id);
      }
    } catch (err) {
      showError(err);
    } finally {
      ui.startButton.disabled = false;
    }
  }

  /* After a reload: show the remembered session again from its trace, and go on with it. */
  async function resumeSession() {
    let saved;
    try { saved = JSON.parse(localStorage.getItem(SESSION_KEY) || "null"); } catch (e) { saved = null; }
    if (!saved || !saved.id) return;
    let summary, trace;
    try {
      summary = await (await api("GET", `/v1/sessions/${encodeURIComponent(saved.id)}`)).json();
      // only the last turns come back into the page: a long session's whole trace is never fetched
      const last = await (await api("GET", `/v1/sessions/${encodeURIComponent(saved.id)}/trace?limit=1`)).json();
      const from = Math.max(0, (last.turns || 0) - RESTORED_TURNS + 1);
      trace = { events: await traceEvents(saved.id, `from_turn=${from}`), earlier: from };
    } catch (err) {
      localStorage.removeItem(SESSION_KEY);  // gone, or another user's: start afresh quietly
      return;
    }
    resetConversation();
    S.session = { id: saved.id, program: summary.program, ended: false, activeAgent: summary.active_agent };
    document.body.dataset.sessionId = saved.id;
    const byTurn = new Map();
    for (const ev of trace.events || []) {
      if (!byTurn.has(ev.turn)) byTurn.set(ev.turn, []);
      byTurn.get(ev.turn).push(ev);
    }
    for (const turn of [...byTurn.keys()].sort((a, b) => a - b)) {
      renderTurn(turn, byTurn.get(turn), null, true);
    }
    for (const item of ui.log.querySelectorAll(".msg.user.foreign")) {
      item.classList.remove("foreign");
      const who = item.querySelector(".who");
      if (who) who.remove();
    }
    if (trace.earlier > 0) {
      ui.log.prepend(el("li", { class: "note" }, el("span", {},
        `${trace.earlier} earlier turn${trace.earlier === 1 ? "" : "s"} not shown`)));
    }
    addNote("Conversation restored");
    setHeader();
    if (summary.ended) endSession();
    else {
      retireActionsExceptLast();
      setComposer(true);
      follow(saved.id);
    }
    setStatus();
  }

  /* The events a trace query selects (`turn=N`, `from_turn=N`), page after page. */
  async function traceEvents(sessionId, query) {
    const events = [];
    let after = 0;
    for (;;) {
      const page = await (await api("GET",
        `/v1/sessions/${encodeURIComponent(sessionId)}/trace?${query}&after=${after}`)).json();
      events.push(...(page.events || []));
      if (page.next === null || page.next === undefined) return events;
      after = page.next;
    }
  }

  function retireActionsExceptLast() {
    const boxes = [...ui.log.querySelectorAll(".actions")];
    boxes.slice(0, -1).forEach((box) => box.querySelectorAll("button, select, input").forEach((n) => { n.disabled = true; }));
  }

  // ---- the trace panel ---------------------------------------------------------------------------

  function formatMs(ms) {
    if (ms === null || ms === undefined || Number.isNaN(ms)) return "";
    if (ms < 1) return `${ms.toFixed(2)} ms`;
    if (ms < 1000) return `${ms.toFixed(1)} ms`;
    return `${(ms / 1000).toFixed(2)} s`;
  }

  function short(value, limit) {
    let text;
    if (typeof value === "string") text = value;
    else {
      try { text = JSON.stringify(value); } catch (e) { text = String(value); }
    }
    const max = limit || 160;
    return text && text.length > max ? `${text.slice(0, max - 1)}…` : text;
  }

  function callArgs(args) {
    if (!args || typeof args !== "object") return "";
    return Object.entries(args).map(([k, v]) => `${k}=${short(v, 60)}`).join(", ");
  }

  function verdict(result) {
    const cls = result === true ? "yes" : result === false ? "no" : "maybe";
    return el("span", { class: `verdict ${cls}` }, result === true ? "true" : result === false ? "false" : String(result));
  }

  /* One line about an event, as nodes (text only). */
  function summarize(ev) {
    const d = ev.data || {};
    switch (ev.type) {
      case "user_message": return [el("span", { class: "strong" }, "user: "), short(d.text, 300)];
      case "bot_message": return [el("span", { class: "strong" }, `${d.shown_as || ev.agent || "bot"}: `), short(d.text, 300),
        d.actions && d.actions.length ? ` [${d.actions.map((a) => a.label || a.id).join(" | ")}]` : ""];
      case "route_decided": return [`→ ${d.agent || "nobody"}`, d.by ? ` by ${d.by}` : "",
        d.condition ? ` (when ${d.condition})` : "", d.reason ? ` — ${d.reason}` : "",
        d.score !== undefined ? ` score ${d.score}` : ""];
      case "agent_chosen": return [`→ ${d.agent || d.target || "?"}`, d.by ? ` by ${d.by}` : "", d.reason ? ` — ${d.reason}` : ""];
      case "handoff_match": return [`handoff → ${d.target || d.agent || "?"}`];
      case "handoff_context": return [`to ${d.target}`, d.passed && d.passed.length ? `, passes ${d.passed.join(", ")}` : "",
        d.history ? `, history: ${d.history}` : ""];
      case "handoff_completed": return [`${d.target} finished: ${d.status}`];
      case "agent_started": case "agent_suspended": case "agent_resumed":
        return [`${ev.agent} ${ev.type.slice(6)}`, d.by ? ` (${d.by})` : ""];
      case "agent_finished": return [`${ev.agent} finished: ${d.status}`, d.message ? ` — ${d.message}` : ""];
      case "condition_evaluated": case "condition":
        return [verdict(d.result), " ", el("code", {}, short(d.condition || d.expression || d.node || "", 200)),
          d.by ? ` by ${d.by}` : "", d.choice && d.choice !== "none" ? ` (choice ${d.choice})` : ""];
      case "constraint_check": return [verdict(d.passed), " ", el("code", {}, short(d.constraint || "", 200)),
        d.kind ? ` (${d.kind})` : "", d.soft ? " soft" : ""];
      case "guardrail_check": return [verdict(d.passed !== undefined ? d.passed : d.result), " ", short(d.guardrail || d.name || d, 200)];
      case "guardrail_verdict": return [verdict(d.allowed), ` ${d.guard || ev.agent || "guardrail"}`, d.by ? ` by ${d.by}` : ""];
      case "draft": return [`draft of ${d.candidate || ev.agent}: `, short(d.reply || "(nothing)", 200),
        d.usable === false ? " (not usable)" : ""];
      case "tool_call": case "tool_called": return [el("code", {}, `${d.tool}(${callArgs(d.args)})`)];
      case "tool_result": return [el("code", {}, d.tool), " ", el("span", { class: `verdict ${d.status === "success" ? "yes" : "no"}` }, d.status || "?"),
        " → ", short(d.args !== undefined ? d.args : d.result, 200), d.error ? ` error: ${short(d.error)}` : ""];
      case "llm_call": {
        const tokens = (d.prompt_tokens !== undefined || d.completion_tokens !== undefined)
          ? ` · ${d.prompt_tokens || 0} + ${d.completion_tokens || 0} tokens` : "";
        return [el("span", { class: "strong" }, d.purpose || "llm"), d.model || d.provider ? ` · ${d.model || d.provider}` : "", tokens,
          d.draft ? ` · draft of ${d.draft}` : "", d.replayed ? " · replayed (no call)" : "",
          d.error ? ` · error: ${short(d.error)}` : ""];
      }
      case "flow_transition": return [`${d.previous || "start"} → `, el("span", { class: "strong" }, d.step || "?")];
      case "gather_extraction": return [`read ${callArgs(d.fields)}`, d.by ? ` by ${d.by}` : ""];
      case "gather_validation": return [short(d, 200)];
      case "arg_set": return [`${d.scope}.${d.name} = ${short(d.value, 80)}`, d.why ? ` (${d.why})` : ""];
      case "args_extracted": return [callArgs(d.args) || "nothing"];
      case "error": case "warning": return [short(d.message || d.error || d, 300), d.where ? ` (${d.where})` : ""];
      case "execution.started": return [`${d.agent || ev.agent || ""} starts turn ${d.turn !== undefined ? d.turn : ev.turn}`];
      case "execution.completed": return [`${d.messages || 0} message(s), ${d.llm_calls || 0} LLM call(s), ` +
        `${(d.prompt_tokens || 0) + (d.completion_tokens || 0)} tokens, status ${d.status}`];
      case "step": return [d.action ? String(d.action) : "", d.agent ? ` → ${d.agent}` : "",
        d.node ? ` (${d.node})` : ""];
      case "jump": return [`→ ${d.target}`, d.node ? ` (${d.node})` : ""];
      default: return [short(d, 200)];
    }
  }

  function duration(ev) {
    const d = ev.data || {};
    if (typeof d.duration_ms === "number") return d.duration_ms;
    return null;
  }

  function renderSummary(turn, events) {
    clear(ui.traceSummary);
    const took = turnDuration(events);
    const agents = [];
    for (const e of events) if (e.agent && !agents.includes(e.agent)) agents.push(e.agent);
    const tools = events.filter((e) => e.type === "tool_call" || e.type === "tool_called");
    const llm = events.filter((e) => e.type === "llm_call");
    const completed = events.find((e) => e.type === "execution.completed");
    let tokens = 0;
    if (completed && completed.data) tokens = (completed.data.prompt_tokens || 0) + (completed.data.completion_tokens || 0);
    else for (const e of llm) tokens += ((e.data || {}).prompt_tokens || 0) + ((e.data || {}).completion_tokens || 0);
    const conditions = events.filter((e) => e.type === "condition_evaluated" || e.type === "condition");
    const errors = events.filter((e) => e.type === "error");
    const chip = (label, value, cls) => el("div", { class: `chip${cls ? " " + cls : ""}` }, el("span", {}, label), el("span", { class: "strong" }, value));
    const chips = [
      chip("time", took === null ? "—" : formatMs(took)),
      chip("agents", agents.join(" → ") || "—"),
      chip("conditions", String(conditions.length)),
      chip("tool calls", String(tools.length)),
      chip("LLM calls", `${llm.length} · ${tokens} tok`),
    ];
    if (errors.length) chips.push(chip("errors", String(errors.length), "bad"));
    ui.traceSummary.append(...chips);
  }

  function renderTraceList(events) {
    clear(ui.traceList);
    const all = ui.traceAll.checked;
    const t0 = events.length ? events[0].ts : 0;
    let previous = t0;
    let hidden = 0;
    for (const ev of events) {
      const since = (ev.ts - previous) * 1000;
      previous = ev.ts;
      if (!all && !KEY_EVENTS.has(ev.type)) { hidden++; continue; }
      const took = duration(ev);
      // the row opens to show the event's data as JSON
      const row = el("li", { class: `ev cat-${CATEGORY[ev.type] || "other"}`, dataset: { type: ev.type, seq: String(ev.seq) } },
        el("details", { class: "ev-data" },
          el("summary", { title: "show the event's data" },
            el("div", { class: "ev-line" },
              el("span", { class: "ev-time", title: `${formatMs(since)} after the previous event` },
                `+${formatMs((ev.ts - t0) * 1000)}`),
              el("span", { class: "ev-type" }, ev.type),
              ev.agent ? el("span", { class: "ev-agent" }, ev.agent) : null,
              took !== null ? el("span", { class: "ev-dur", title: "duration" }, formatMs(took)) : null,
              el("span", { class: "ev-seq" }, `#${ev.seq}`)),
            el("div", { class: "ev-summary" }, summarize(ev))),
          el("pre", {}, JSON.stringify(ev.data, null, 2))));
      ui.traceList.appendChild(row);
    }
    if (hidden) {
      ui.traceList.appendChild(el("li", { class: "ev-hidden" },
        `${hidden} more event${hidden === 1 ? "" : "s"} (steps, values set…): tick "show every event"`));
    }
    if (!events.length) ui.traceList.appendChild(el("li", { class: "ev-hidden" }, "No events recorded for this turn."));
  }

  async function openTrace(turn) {
    S.openTurn = turn;
    let events = S.turns.get(turn);
    if (!events || !events.length) {
      try {
        events = await traceEvents(S.session.id, `turn=${turn}`);
      } catch (err) {
        showError(err);
        return;
      }
    }
    ui.trace.hidden = false;
    document.body.classList.add("tracing");
    ui.traceTitle.textContent = `Turn ${turn}`;
    const user = events.find((e) => e.type === "user_message");
    ui.traceSub.textContent = user ? `after “${short((user.data || {}).text || "", 60)}”` : (turn === 0 ? "the start of the session" : "started by the server");
    renderSummary(turn, events);
    renderTraceList(events);
    for (const b of ui.log.querySelectorAll(".trace-link")) {
      b.classList.toggle("active", b.dataset.traceTurn === String(turn));
    }
    ui.trace.dataset.turn = String(turn);
  }

  function closeTrace() {
    S.openTurn = null;
    ui.trace.hidden = true;
    document.body.classList.remove("tracing");
    delete ui.trace.dataset.turn;
    for (const b of ui.log.querySelectorAll(".trace-link.active")) b.classList.remove("active");
  }

  // ---- wiring ------------------------------------------------------------------------------------

  ui.tokenForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    S.token = ui.tokenInput.value.trim();
    if (S.token) localStorage.setItem(TOKEN_KEY, S.token);
    else localStorage.removeItem(TOKEN_KEY);
    showTokenState();
    if (!S.token) {
      showError(new ApiError(0, "paste an API token first", null));
      return;
    }
    await loadPrograms();
  });

  ui.tokenForget.addEventListener("click", () => {
    S.token = "";
    localStorage.removeItem(TOKEN_KEY);
    localStorage.removeItem(SESSION_KEY);
    showTokenState();
    resetConversation();
    loadPrograms();
  });

  ui.startForm.addEventListener("submit", (ev) => {
    ev.preventDefault();
    startSession(ui.programSelect.value);
  });

  ui.composer.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = ui.input.value;
    if (!text.trim()) return;
    ui.input.value = "";
    send(text);
  });

  ui.noticeClose.addEventListener("click", hideNotice);
  ui.traceClose.addEventListener("click", closeTrace);
  ui.traceAll.addEventListener("change", () => { if (S.openTurn !== null) openTrace(S.openTurn); });
  document.addEventListener("keydown", (ev) => { if (ev.key === "Escape" && !ui.trace.hidden) closeTrace(); });

  async function boot() {
    // `frontdesk serve` prints /#token=...: take it, keep it, and drop it from the address bar
    const given = new URLSearchParams(location.hash.slice(1)).get("token");
    if (given) {
      S.token = given;
      localStorage.setItem(TOKEN_KEY, given);
      history.replaceState(null, "", location.pathname + location.search);
    }
    showTokenState();
    setHeader();
    setStatus();
    if (S.token && await loadPrograms()) {
      await resumeSession();
      // opened from the address `frontdesk serve` prints, or with one program to talk to: no need to
      // click "New conversation" before the first message
      const only = document.body.dataset.programs === "1";
      if (!S.session && (given || only) && ui.programSelect.value) await startSession(ui.programSelect.value);
    }
    document.body.dataset.ready = "true";
  }

  boot();
})();
