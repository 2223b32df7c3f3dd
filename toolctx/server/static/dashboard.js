// toolctx dashboard: agents, their tiers and items, kept sessions; live over a WebSocket.
// Plain script, no build step and nothing loaded from elsewhere. Text from the server is
// always set with textContent, never parsed as HTML, and made visible() first.
"use strict";

const TIERS = ["HOT", "WARM", "COLD"];
const COLORS = { HOT: "#ef4444", WARM: "#f59e0b", COLD: "#3b82f6" };
const $ = (id) => document.getElementById(id);
const SHOW_BYTES = 1048576;  // bytes of a stored context shown at once, as `toolctx show` does

// Stored text comes from tools and models: control characters (C0, DEL, C1) and the marks
// that reorder text (U+202E and its kin) are shown as escapes, never acted on. Newlines and
// tabs stay where a multi-line view asks for them.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;
const UNSAFE_KEEPING_LINES = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;
function visible(value, lines = false) {
  return String(value ?? "").replace(lines ? UNSAFE_KEEPING_LINES : UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

function el(tag, props = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "text") node.textContent = visible(value);
    else if (key === "title") node.title = visible(value);
    else if (key === "class") node.className = value;
    else if (key.startsWith("data-") || key.startsWith("aria-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) node.append(child);
  return node;
}

const fmt = (n) => Number(n).toLocaleString("en-US");

async function getJSON(url) {
  const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const detail = body && body.detail;
    const text = typeof detail === "string" ? detail : JSON.stringify(detail);
    throw new Error(`${response.status}: ${text || response.statusText}`);
  }
  return body;
}

const errors = {
  show(message) { const box = $("error"); box.textContent = message; box.hidden = false; },
  clear() { $("error").hidden = true; $("error").textContent = ""; },
};

// ContextTierChart: a donut of items per tier, and a legend of items and tokens per tier.
class ContextTierChart {
  constructor(svg, legend) { this.svg = svg; this.legend = legend; }

  render(agent) {
    const counts = TIERS.map((t) => agent[`${t.toLowerCase()}_count`]);
    const tokens = TIERS.map((t) => agent[`${t.toLowerCase()}_tokens`]);
    const totalItems = counts.reduce((a, b) => a + b, 0);
    const totalTokens = tokens.reduce((a, b) => a + b, 0);
    this.svg.replaceChildren();
    const ns = "http://www.w3.org/2000/svg";
    const ring = (color, dash, offset, tier, count) => {
      const circle = document.createElementNS(ns, "circle");
      for (const [k, v] of Object.entries({ cx: 60, cy: 60, r: 45, fill: "none", stroke: color, "stroke-width": 22,
        "stroke-dasharray": dash, "stroke-dashoffset": offset, transform: "rotate(-90 60 60)" })) circle.setAttribute(k, v);
      if (tier) { circle.setAttribute("data-tier", tier); circle.setAttribute("data-count", count); }
      return circle;
    };
    const length = 2 * Math.PI * 45;
    this.svg.append(ring("#e5e7eb", `${length} 0`, 0));
    let start = 0;
    TIERS.forEach((tier, i) => {
      if (!counts[i]) return;
      const part = (counts[i] / totalItems) * length;
      this.svg.append(ring(COLORS[tier], `${part} ${length - part}`, -start, tier, counts[i]));
      start += part;
    });
    const label = document.createElementNS(ns, "text");
    for (const [k, v] of Object.entries({ x: 60, y: 66, "text-anchor": "middle", "font-size": 18, "font-weight": 600 }))
      label.setAttribute(k, v);
    label.textContent = fmt(totalItems);
    this.svg.append(label);

    const rows = TIERS.map((tier, i) => el("tr", { "data-tier": tier }, [
      el("th", {}, [el("span", { class: `swatch tier-${tier}` }), tier]),
      el("td", { class: "count", text: fmt(counts[i]) }),
      el("td", { class: "tokens", text: fmt(tokens[i]) }),
      el("td", { class: "share", text: totalTokens ? `${((100 * tokens[i]) / totalTokens).toFixed(1)} %` : "–" }),
    ]));
    this.legend.tBodies[0].replaceChildren(...rows);
    const foot = this.legend.tFoot;
    foot.querySelector('[data-tier="TOTAL"] .count').textContent = fmt(totalItems);
    foot.querySelector('[data-tier="TOTAL"] .tokens').textContent = fmt(totalTokens);
    foot.querySelector('[data-tier="ARCHIVED"] .count').textContent = fmt(agent.archived_count);
    foot.querySelector('[data-tier="ARCHIVED"] .tokens').textContent = fmt(agent.archived_tokens);
  }
}

// ContextItemList: the items as a table, sorted by any column.
class ContextItemList {
  constructor(table) {
    this.table = table;
    this.items = [];
    this.sort = { key: "importance_score", dir: "desc" };
    for (const button of table.querySelectorAll("th button")) {
      button.addEventListener("click", () => {
        const key = button.dataset.sort;
        this.sort = { key, dir: this.sort.key === key && this.sort.dir === "desc" ? "asc" : "desc" };
        this.draw();
      });
    }
  }

  render(items) { this.items = items; this.draw(); }

  draw() {
    const { key, dir } = this.sort;
    const sign = dir === "asc" ? 1 : -1;
    const tierRank = (t) => 3 - TIERS.indexOf(t);
    const value = (item) => (key === "tier" ? tierRank(item.tier) : item[key]);
    const sorted = [...this.items].sort((a, b) => {
      const x = value(a), y = value(b);
      return (x < y ? -1 : x > y ? 1 : 0) * sign || (a.id - b.id);
    });
    for (const button of this.table.querySelectorAll("th button"))
      button.dataset.dir = button.dataset.sort === key ? dir : "";
    const rows = sorted.map((item) => el("tr", { "data-id": item.id, "data-tier": item.tier, class: item.archived ? "archived" : "" }, [
      el("td", { class: "num", text: item.id }),
      el("td", { text: item.item_type }),
      el("td", {}, [el("span", { class: `pill tier-${item.tier}`, text: item.tier })]),
      el("td", { class: "num score", text: item.importance_score.toFixed(3) }),
      el("td", { class: "num", text: fmt(item.tokens) }),
      el("td", { class: "num", text: fmt(item.access_count) }),
      el("td", { text: item.last_accessed.replace("T", " ").slice(0, 19) }),
      el("td", { class: "content", text: item.content.slice(0, 300), title: item.content.slice(0, 2000) }),
    ]));
    this.table.tBodies[0].replaceChildren(...rows);
  }
}

// ContextPanel: the agent list on the left, the chosen agent's chart and items on the right.
class ContextPanel {
  constructor() {
    this.agents = [];
    this.selected = decodeURIComponent((location.hash.match(/agent=([^&]*)/) || [])[1] || "") || null;
    this.chart = new ContextTierChart($("tier-pie"), $("tier-legend"));
    this.list = new ContextItemList($("item-list"));
    this.busy = false;
    this.again = false;
    this.timer = null;
    for (const id of ["tier-filter", "show-archived", "limit"]) $(id).addEventListener("change", () => this.refresh());
  }

  // Changes come in bursts: reload at most every 100 ms, and once more if one arrived meanwhile.
  schedule() {
    if (this.timer === null) this.timer = setTimeout(() => { this.timer = null; this.refresh(); }, 100);
  }

  async refresh() {
    if (this.busy) { this.again = true; return; }
    this.busy = true;
    try {
      do { this.again = false; await this.load(); } while (this.again);
      errors.clear();
    } catch (error) {
      errors.show(`Could not load the memory: ${visible(error.message)}`);
    } finally {
      this.busy = false;
    }
  }

  async load() {
    const { agents } = await getJSON("/api/agents");
    this.agents = agents;
    if (!this.selected || !agents.some((a) => a.agent_id === this.selected))
      this.selected = agents.length ? agents[0].agent_id : null;
    this.drawAgents();
    $("context-panel").hidden = this.selected === null;
    if (this.selected === null) return;
    const agent = agents.find((a) => a.agent_id === this.selected);
    $("agent-title").textContent = visible(agent.agent_id);
    this.chart.render(agent);
    const params = new URLSearchParams({ limit: $("limit").value });
    if ($("tier-filter").value) params.set("tier", $("tier-filter").value);
    if ($("show-archived").checked) params.set("archived", "true");
    const { items } = await getJSON(`/api/agents/${encodeURIComponent(agent.agent_id)}/context?${params}`);
    this.list.render(items);
    const tier = $("tier-filter").value;
    const unarchived = tier ? agent[`${tier.toLowerCase()}_count`] : TIERS.reduce((n, t) => n + agent[`${t.toLowerCase()}_count`], 0);
    // Archived items are counted apart, not by tier: with them shown, only the number shown is known.
    $("item-count").textContent = $("show-archived").checked
      ? `${fmt(items.length)} shown`
      : `${fmt(items.length)} shown of ${fmt(unarchived)}`;
    document.body.dataset.revision = String(this.revision ?? "");
  }

  drawAgents() {
    const rows = this.agents.map((agent) => {
      const counts = TIERS.map((t) => agent[`${t.toLowerCase()}_count`]);
      const total = counts.reduce((a, b) => a + b, 0);
      const bar = el("span", { class: "bar" }, TIERS.map((t, i) => {
        const part = el("span", { class: `tier-${t}` });
        part.style.width = total ? `${(100 * counts[i]) / total}%` : "0";
        return part;
      }));
      const button = el("button", { type: "button", "aria-current": String(agent.agent_id === this.selected) }, [
        el("span", { class: "name", text: agent.agent_id }),
        el("span", { class: "meta", text: `${fmt(total)} items · ${fmt(agent.hot_tokens + agent.warm_tokens + agent.cold_tokens)} tokens` }),
        bar,
      ]);
      button.addEventListener("click", () => {
        this.selected = agent.agent_id;
        history.replaceState(null, "", `#agent=${encodeURIComponent(agent.agent_id)}`);
        this.refresh();
      });
      return el("li", { "data-agent": agent.agent_id }, [button]);
    });
    $("agent-list").replaceChildren(...rows);
    $("no-agents").hidden = this.agents.length > 0;
  }
}

// The kept sessions: their contexts, and one context in full on a click.
class SessionsPanel {
  constructor() { this.selected = null; }

  async refresh() {
    try {
      const sessions = await getJSON("/api/sessions");
      $("no-sessions").hidden = sessions.length > 0;
      $("session-list").replaceChildren(...sessions.map((s) => {
        const button = el("button", { type: "button", "aria-current": String(s.session_id === this.selected) }, [
          el("span", { class: "name", text: s.session_id }),
          el("span", { class: "meta", text: `${s.state} · ${fmt(s.contexts)} contexts · ${fmt(s.tokens)} tokens` }),
        ]);
        button.addEventListener("click", () => { this.selected = s.session_id; this.refresh(); });
        return el("li", { "data-session": s.session_id }, [button]);
      }));
      if (this.selected) await this.show(this.selected);
      errors.clear();
    } catch (error) {
      errors.show(`Could not load the sessions: ${visible(error.message)}`);
    }
  }

  async show(sessionId) {
    const contexts = await getJSON(`/api/sessions/${encodeURIComponent(sessionId)}/contexts`);
    $("session-panel").hidden = false;
    $("session-title").textContent = visible(sessionId);
    $("context-view").hidden = true;
    $("context-more").hidden = true;
    $("context-list").tBodies[0].replaceChildren(...contexts.map((c) => {
      const row = el("tr", { class: "clickable", "data-id": c.id }, [
        el("td", { text: c.id }), el("td", { text: c.tool_name }), el("td", { text: c.tool_description }),
        el("td", { class: "num", text: fmt(c.size) }), el("td", { class: "num", text: fmt(c.tokens) }),
        el("td", { text: c.timestamp.replace("T", " ").slice(0, 19) }),
        el("td", { class: "content", text: c.preview }),
      ]);
      row.addEventListener("click", () => this.read(sessionId, c.id, 0));
      return row;
    }));
  }

  // A stored context in parts of SHOW_BYTES: never the whole of a large one at once.
  async read(sessionId, contextId, offset) {
    try {
      const part = await getJSON(`/api/sessions/${encodeURIComponent(sessionId)}/contexts/` +
        `${encodeURIComponent(contextId)}/excerpt?offset=${offset}&length=${SHOW_BYTES}`);
      const whole = part.offset === 0 && part.next_offset === null;
      let text = part.text;
      if (whole) { try { text = JSON.stringify(JSON.parse(part.text), null, 2); } catch { /* shown as stored */ } }
      $("context-view").textContent = visible(text, true);
      $("context-view").hidden = false;
      const more = $("context-more");
      more.hidden = whole;
      if (whole) return;
      const leftOut = part.size - (part.end - part.offset);
      $("context-left-out").textContent =
        `bytes ${fmt(part.offset)} to ${fmt(part.end)} of ${fmt(part.size)} shown; ${fmt(leftOut)} bytes left out ` +
        `(the whole context: toolctx show ${visible(sessionId)} ${visible(contextId)} --full)`;
      const next = $("context-next");
      next.hidden = part.next_offset === null;
      next.onclick = () => this.read(sessionId, contextId, part.next_offset);
      const first = $("context-first");
      first.hidden = part.offset === 0;
      first.onclick = () => this.read(sessionId, contextId, 0);
    } catch (error) { errors.show(`Could not load context ${visible(contextId)}: ${visible(error.message)}`); }
  }
}

// The live feed: reconnects with a growing pause, and reloads everything after a gap.
function connect(panel, attempt = 0) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/api/events`);
  const live = $("live");
  socket.addEventListener("open", () => { live.dataset.state = "live"; live.textContent = "live"; attempt = 0; });
  socket.addEventListener("message", (message) => {
    const event = JSON.parse(message.data);
    if (typeof event.revision === "number") panel.revision = event.revision;
    panel.schedule();  // a hello after a reconnect reloads too: changes may have been missed
  });
  socket.addEventListener("close", () => {
    live.dataset.state = "offline";
    live.textContent = "reconnecting…";
    setTimeout(() => connect(panel, attempt + 1), Math.min(5000, 250 * 2 ** attempt));
  });
}

function showView(name) {
  for (const view of ["memory", "sessions"]) {
    $(`view-${view}`).hidden = view !== name;
    $(`tab-${view}`).setAttribute("aria-pressed", String(view === name));
  }
}

window.addEventListener("DOMContentLoaded", () => {
  const panel = new ContextPanel();
  const sessions = new SessionsPanel();
  $("tab-memory").addEventListener("click", () => { showView("memory"); panel.refresh(); });
  $("tab-sessions").addEventListener("click", () => { showView("sessions"); sessions.refresh(); });
  window.toolctxDashboard = { panel, sessions };
  panel.refresh();
  connect(panel);
});
