// GEM studio: sends forms to the brain's JSON API, shows its validation messages by their fields, keeps the
// calls list live from server-sent events, and runs the chat panel. Everything a server or user wrote is
// put in the page as text (textContent), never as markup.
"use strict";

(function () {
  const csrf = document.body.dataset.csrf || "";

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  // api sends a JSON request with the session's CSRF token and returns the decoded answer.
  async function api(method, url, body) {
    const init = { method, credentials: "same-origin", headers: { "X-CSRF-Token": csrf, Accept: "application/json" } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const resp = await fetch(url, init);
    let data = null;
    try { data = await resp.json(); } catch (_) { data = null; }
    if (resp.status === 401) {
      location.href = "/studio/login?next=" + encodeURIComponent(location.pathname + location.search);
    }
    return { status: resp.status, data: data || {} };
  }

  // fieldValue reads one form field as the API wants it (data-type: list, int, float, bool, bool-value,
  // json); undefined leaves it out.
  function fieldValue(input) {
    const type = input.dataset.type || "text";
    if (type === "bool") return input.checked;
    if (type === "bool-value") return input.value === "true";
    const raw = input.value;
    if (raw.trim() === "") {
      if ("nullEmpty" in input.dataset) return null;
      if ("optional" in input.dataset) return undefined;
      if (type === "list") return [];
      if (type === "int" || type === "float") return undefined;
      return raw;
    }
    switch (type) {
      case "list": return raw.split(/[\n,]/).map((s) => s.trim()).filter((s) => s !== "");
      case "int": { const n = Number(raw); return Number.isInteger(n) ? n : raw; }
      case "float": { const n = Number(raw); return Number.isFinite(n) ? n : raw; }
      case "json": try { return JSON.parse(raw); } catch (_) { throw { field: input.name, message: "not valid JSON" }; }
      default: return raw;
    }
  }

  // fieldOf names the form field an API error is about: details.field, details.parameter, or the first
  // segment of a JSON pointer (a schema violation's path).
  function fieldsOf(err) {
    const d = err.details || {};
    const out = [];
    const fromPointer = (p) => (typeof p === "string" && p.startsWith("/") ? p.split("/")[1] : "");
    if (d.field) out.push({ field: d.field, message: err.message });
    if (d.parameter) out.push({ field: d.parameter, message: err.message });
    if (d.pointer) out.push({ field: fromPointer(d.pointer), message: err.message });
    for (const v of d.violations || []) out.push({ field: fromPointer(v.path), message: v.message });
    return out;
  }

  function clearErrors(form) {
    form.querySelectorAll(".field-error, .form-error").forEach((e) => { e.textContent = ""; e.classList.remove("shown"); });
    form.querySelectorAll(".invalid").forEach((e) => e.classList.remove("invalid"));
  }

  function showErrors(form, errors) {
    const general = form.querySelector(".form-error");
    for (const err of errors) {
      const fields = fieldsOf(err);
      let placed = false;
      for (const f of fields) {
        const slot = f.field && form.querySelector(`.field-error[data-for="${CSS.escape(f.field)}"]`);
        if (slot) {
          slot.textContent = (slot.textContent ? slot.textContent + " " : "") + f.message;
          slot.classList.add("shown");
          const input = form.querySelector(`[name="${CSS.escape(f.field)}"]`);
          if (input) input.classList.add("invalid");
          placed = true;
        }
      }
      if (!placed && general) {
        general.textContent = (general.textContent ? general.textContent + " " : "") + (err.message || "The request failed.");
        general.classList.add("shown");
      }
    }
  }

  // fill replaces {a.b} in a template with values from the answer.
  function fill(template, data) {
    return template.replace(/\{([a-z_.]+)\}/g, (_, path) => {
      let v = data;
      for (const k of path.split(".")) v = v == null ? v : v[k];
      return encodeURIComponent(v == null ? "" : String(v));
    });
  }

  async function submitForm(form) {
    clearErrors(form);
    if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) return;
    const body = {};
    let url = form.dataset.api;
    try {
      for (const input of form.elements) {
        if (!input.name || input.name === "_csrf" || input.type === "file") continue;
        if ("path" in input.dataset) {
          url = url.replace("{" + input.name + "}", encodeURIComponent(input.value));
          continue;
        }
        const v = fieldValue(input);
        if (v !== undefined) body[input.name] = v;
      }
    } catch (e) {
      showErrors(form, [{ message: e.message, details: { field: e.field } }]);
      return;
    }
    const method = (form.dataset.method || "POST").toUpperCase();
    if ("chat" in form.dataset) return chatTurn(form, url, body);
    const button = form.querySelector("button[type=submit], button:not([type])");
    if (button) button.disabled = true;
    try {
      const { status, data } = await api(method, url, method === "DELETE" ? undefined : body);
      if (status >= 400 || data.ok === false) {
        showErrors(form, data.errors || [{ message: `The request failed (HTTP ${status}).` }]);
        return;
      }
      if (form.dataset.redirect) location.href = fill(form.dataset.redirect, data);
      else location.reload();
    } catch (e) {
      showErrors(form, [{ message: "The brain could not be reached: " + e.message }]);
    } finally {
      if (button) button.disabled = false;
    }
  }

  document.addEventListener("submit", (ev) => {
    const form = ev.target;
    if (!(form instanceof HTMLFormElement) || !form.dataset.api) return;
    ev.preventDefault();
    submitForm(form);
  });

  // A file input with data-fills puts the file's text in the named field.
  document.addEventListener("change", (ev) => {
    const input = ev.target;
    if (!(input instanceof HTMLInputElement) || input.type !== "file" || !input.dataset.fills || !input.files[0]) return;
    input.files[0].text().then((text) => { input.form.elements[input.dataset.fills].value = text; });
  });

  // Live calls: rows arrive from the event stream, newest on top; a call already listed is updated.
  function callRow(c) {
    const tr = el("tr", { "data-id": c.id, class: "arrived" });
    const td = (text, cls) => { const cell = el("td", cls ? { class: cls } : {}, text); tr.appendChild(cell); return cell; };
    td(c.created_at.replace("T", " ").replace(/\.(\d{3})\d*Z$/, ".$1"), "nw");
    const tool = td(""); tool.appendChild(el("a", { href: "/studio/registry/" + encodeURIComponent(c.tool) }, c.tool));
    const st = td(""); st.appendChild(el("span", { class: statusClass(c.status) }, c.status));
    td(c.error_code); td(c.requested_by); td(c.agent); td(c.device);
    td(c.duration_ms ? c.duration_ms.toFixed(1) + " ms" : "", "nw");
    const link = td(""); link.appendChild(el("a", { class: "mono", href: "/studio/calls/" + c.id, title: c.id }, c.id.slice(-8))); // as the pages show ids: the last 8 characters (a UUIDv7's first 8 are its minute)
    return tr;
  }

  function statusClass(s) {
    if (["succeeded", "completed"].includes(s)) return "st st-ok";
    if (["failed", "timeout", "rejected", "expired", "outcome_unknown"].includes(s)) return "st st-bad";
    if (["not_configured", "awaiting_approval"].includes(s)) return "st st-warn";
    return "st";
  }

  function liveCalls(table) {
    const tbody = table.tBodies[0];
    const state = document.getElementById("live-state");
    const source = new EventSource(table.dataset.events);
    source.addEventListener("ready", () => state && state.classList.add("on"));
    source.addEventListener("call", (ev) => {
      const c = JSON.parse(ev.data);
      const empty = tbody.querySelector("tr.empty");
      if (empty) empty.remove();
      const row = callRow(c);
      const old = tbody.querySelector(`tr[data-id="${CSS.escape(c.id)}"]`);
      if (old) old.replaceWith(row); else tbody.insertBefore(row, tbody.firstChild);
      while (tbody.rows.length > 300) tbody.deleteRow(-1);
    });
    source.addEventListener("lagged", () => document.getElementById("lagged")?.classList.remove("hidden"));
    source.addEventListener("logout", () => { location.href = "/studio/login"; });
    source.onerror = () => state && state.classList.remove("on");
  }

  // Chat: a turn posts the message and reads its run's events as they are recorded (the turn's steps, its
  // calls and their receipts), then the reply; the calls list also hears the agent's calls from the studio's
  // call stream.
  const transcript = document.getElementById("transcript");
  function say(who, text, cls) {
    const p = el("div", { class: "msg " + (cls || who) });
    p.appendChild(el("span", { class: "who" }, who));
    p.appendChild(el("span", { class: "text" }, text));
    transcript.appendChild(p);
    transcript.scrollTop = transcript.scrollHeight;
    return p;
  }

  // stream posts a request asking for its run's events (Accept: text/event-stream) and calls onEvent with
  // each as it comes; it returns the status and the last event's data (the turn's response), or the JSON
  // answer of a request refused before its turn began.
  async function stream(url, body, onEvent) {
    const resp = await fetch(url, { method: "POST", credentials: "same-origin", body: JSON.stringify(body),
      headers: { "X-CSRF-Token": csrf, Accept: "text/event-stream", "Content-Type": "application/json" } });
    if (resp.status === 401) location.href = "/studio/login?next=" + encodeURIComponent(location.pathname + location.search);
    if (!(resp.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
      let data = null;
      try { data = await resp.json(); } catch (_) { data = null; }
      return { status: resp.status, data: data || {} };
    }
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buf = "", last = {};
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let end;
      while ((end = buf.indexOf("\n\n")) >= 0) {
        const ev = { event: "message", data: [] };
        for (const line of buf.slice(0, end).split("\n")) {
          const i = line.indexOf(":");
          if (i <= 0) continue; // a comment (keep-alive)
          const field = line.slice(0, i), val = line.slice(i + 1).replace(/^ /, "");
          if (field === "event") ev.event = val; else if (field === "data") ev.data.push(val); else if (field === "id") ev.id = Number(val);
        }
        buf = buf.slice(end + 2);
        if (!ev.data.length) continue;
        let data = {};
        try { data = JSON.parse(ev.data.join("\n")); } catch (_) { data = {}; }
        if (ev.event === "response") last = data; else onEvent(ev.event, data);
      }
    }
    return { status: resp.status, data: last };
  }

  // stepText says an event of the turn in a few words; "" for the ones not shown.
  function stepText(kind, d) {
    switch (kind) {
      case "llm_started": return d.attempt > 1 ? `asking the model again (step ${d.iteration}, attempt ${d.attempt})` : `asking the model (step ${d.iteration})`;
      case "llm_ended": return d.error ? `the model failed (attempt ${d.attempt})` : `the model answered (step ${d.iteration}, ${Math.round(d.latency_ms)} ms)`;
      case "call_enqueued": return `calling ${d.tool}`;
      case "call_awaiting_approval": return `${d.tool} awaits approval`;
      case "receipt": return `${d.tool} ${d.status}`;
      case "run_resumed": return "taken over by another brain";
      case "error": return `error ${d.code}: ${d.message}`;
    }
    return "";
  }

  // chatTurn streams a turn: its steps show under the pending reply as they happen, its calls in the list,
  // the text the model writes fills the pending reply as it comes (each llm_started — another attempt, the
  // next step — starts it again), and the reply replaces it when the turn ends.
  async function chatTurn(form, url, body) {
    const message = body.message;
    if (!message || !message.trim()) {
      showErrors(form, [{ message: "Write a message.", details: { field: "message" } }]);
      return;
    }
    say("you", message);
    form.elements.message.value = "";
    const wait = say("agent", "…", "agent pending");
    const pending = wait.querySelector(".text");
    let written = "";
    const steps = el("ol", { class: "steps" });
    wait.appendChild(steps);
    const button = form.querySelector("button");
    button.disabled = true;
    try {
      const { status, data } = await stream(url, body, (kind, d) => {
        if (kind === "run_started" && d.session_id) document.getElementById("chat-session").value = d.session_id;
        if (kind === "call_enqueued") addChatCall({ id: d.call_id, tool: d.tool, status: "queued", error_code: "" });
        if (kind === "call_awaiting_approval") addChatCall({ id: d.call_id, tool: d.tool, status: "awaiting_approval", error_code: "" });
        if (kind === "receipt") addChatCall({ id: d.call_id, tool: d.tool, status: d.status, error_code: d.error_code || "" });
        if (kind === "llm_started") { written = ""; pending.textContent = "…"; }
        if (kind === "text") { written += d.text || ""; pending.textContent = written; transcript.scrollTop = transcript.scrollHeight; }
        const text = stepText(kind, d);
        if (text) { steps.appendChild(el("li", {}, text)); transcript.scrollTop = transcript.scrollHeight; }
      });
      if (data.session_id) document.getElementById("chat-session").value = data.session_id;
      for (const tc of data.tool_calls || []) addChatCall({ id: tc.call_id, tool: tc.tool, status: tc.status, error_code: tc.error_code || "" });
      wait.classList.remove("pending");
      pending.textContent = data.reply || "";
      if (!data.reply && !steps.children.length) wait.remove();
      if (status >= 400 || data.ok === false) showErrors(form, data.errors || [{ message: `The turn failed (HTTP ${status}).` }]);
    } catch (e) {
      wait.remove();
      showErrors(form, [{ message: "The brain could not be reached: " + e.message }]);
    } finally {
      button.disabled = false;
    }
  }

  function addChatCall(c) {
    const list = document.getElementById("chat-calls");
    if (!list) return;
    const key = c.id || c.tool + ":" + list.children.length;
    let li = c.id ? list.querySelector(`li[data-id="${CSS.escape(c.id)}"]`) : null;
    const fresh = el("li", { "data-id": key });
    const name = c.id ? el("a", { href: "/studio/calls/" + c.id }, c.tool) : el("span", {}, c.tool);
    fresh.appendChild(name);
    fresh.appendChild(document.createTextNode(" "));
    fresh.appendChild(el("span", { class: statusClass(c.status) }, c.status));
    if (c.error_code) fresh.appendChild(el("span", { class: "sub" }, " " + c.error_code));
    if (li) li.replaceWith(fresh); else list.appendChild(fresh);
  }

  function liveChat(chat) {
    const source = new EventSource(chat.dataset.events);
    source.addEventListener("call", (ev) => addChatCall(JSON.parse(ev.data)));
    source.addEventListener("logout", () => { location.href = "/studio/login"; });
  }

  // The architecture page's numbers refresh every 2 seconds.
  function pollQueue(marker) {
    const ids = { available: "q-available", scheduled: "q-scheduled", running: "q-running", awaiting_approval: "q-approval",
      receipts_last_minute: "q-receipts", executors_alive: "q-executors", devices_connected: "q-devices" };
    const tick = async () => {
      try {
        const { status, data } = await api("GET", marker.dataset.poll);
        if (status === 200) {
          for (const [k, id] of Object.entries(ids)) { const e = document.getElementById(id); if (e) e.textContent = String(data[k]); }
          const o = document.getElementById("q-oldest"); if (o) o.textContent = Number(data.oldest_wait_seconds).toFixed(1);
          marker.classList.add("on");
        }
      } catch (_) { marker.classList.remove("on"); }
    };
    tick();
    setInterval(tick, 2000);
  }

  document.addEventListener("DOMContentLoaded", () => {
    const calls = document.querySelector("table[data-events]");
    if (calls) liveCalls(calls);
    const chat = document.getElementById("chat");
    if (chat) liveChat(chat);
    const poll = document.querySelector("[data-poll]");
    if (poll) pollQueue(poll);
  });
})();
