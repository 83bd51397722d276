// guild-hall's web face: live updates (server-sent events), the forms that call the
// catalogue's operations, line comments and the board's filter. Every piece of HTML it puts
// in the page was escaped by the server; what it builds itself is set as text.
"use strict";
(function () {
  const body = document.body;
  const data = body.dataset;

  // ---- live: /events?view=…&since=… with the body's data as the query
  function openStream() {
    if (!data.view || data.view === "none") return;
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(data)) {
      if (k === "live" || k === "generation") continue;
      q.set(k, v);
    }
    q.set("since", data.generation || "0");
    for (const f of document.querySelectorAll("#filters [name]")) q.set(f.name, f.value);
    const es = new EventSource("/events?" + q.toString());
    const live = document.getElementById("live");
    const say = (state, words) => {
      body.dataset.live = state;
      if (live) live.textContent = words;
    };
    es.addEventListener("hello", () => say("on", "live"));
    es.onerror = () => say("lost", "reconnecting…");
    es.onmessage = () => {};
    // Each event names the element it replaces (or, `append:<id>`, extends).
    const handle = (name, html) => {
      if (name.startsWith("append:")) {
        const el = document.getElementById(name.slice(7));
        if (!el) return;
        const follow = el.scrollTop + el.clientHeight >= el.scrollHeight - 4;
        el.insertAdjacentHTML("beforeend", html);
        if (follow) el.scrollTop = el.scrollHeight;
        return;
      }
      const el = document.getElementById(name);
      if (el) swap(el, html);
    };
    // A page's own (a plan's task logs) are named in its data-events.
    const own = (data.events || "").split(" ").filter((n) => n);
    for (const name of ["board", "commission-live", "review", "log", "log-attempt", "append:log", "transcript", "plan-live", "meeting-live", "append:transcript", "reply", "append:reply", ...own]) {
      es.addEventListener(name, (e) => {
        handle(name, e.data);
        if (name === "board") filterBoard();
        if (name === "review") countComments();
      });
    }
    window.guildHallStream = es;
  }

  // Replace an element's content, keeping what was typed in its [data-keep] fields (by id)
  // and where the focus was.
  function swap(el, html) {
    const kept = {};
    for (const f of el.querySelectorAll("[data-keep][id]")) kept[f.id] = f.value;
    const focused = document.activeElement && el.contains(document.activeElement) ? document.activeElement.id : null;
    el.innerHTML = html;
    for (const [id, v] of Object.entries(kept)) {
      const f = document.getElementById(id);
      if (f) f.value = v;
    }
    if (focused) {
      const f = document.getElementById(focused);
      if (f) f.focus();
    }
  }

  // ---- actions: form[data-api] posts its named fields over data-args as JSON
  function result(ok, words) {
    let el = document.getElementById("action-result");
    if (!el) {
      el = document.createElement("p");
      el.id = "action-result";
      el.setAttribute("role", "status");
      el.setAttribute("data-testid", "action-result");
      document.getElementById("main").prepend(el);
    }
    el.dataset.state = ok ? "ok" : "error";
    el.textContent = words;
  }

  async function submit(form) {
    if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) return;
    const args = JSON.parse(form.dataset.args || "{}");
    for (const f of form.querySelectorAll("[name]")) {
      if (f.value !== "") args[f.name] = f.value;
    }
    if ("feedback" in form.dataset) {
      const feedback = [];
      if (args.message) feedback.push({ text: args.message });
      delete args.message;
      for (const c of document.querySelectorAll("textarea.line-comment")) {
        if (c.value.trim() !== "") feedback.push({ text: c.value, path: c.dataset.path, line: Number(c.dataset.line) });
      }
      args.feedback = feedback;
    }
    const q = data.project ? "?project=" + encodeURIComponent(data.project) : "";
    for (const b of form.querySelectorAll("button")) b.disabled = true;
    // A message is shown in the page as it is sent (a meeting's): its box empties at once.
    if ("clear" in form.dataset) for (const f of form.querySelectorAll("textarea")) f.value = "";
    try {
      const r = await fetch("/api/" + form.dataset.api + q, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(args),
        credentials: "same-origin",
      });
      const answer = await r.json().catch(() => ({ error: "the server's answer is not JSON" }));
      if (r.ok) {
        result(true, answer.text || "done");
        for (const f of form.querySelectorAll("textarea")) f.value = "";
        if ("feedback" in form.dataset) for (const c of document.querySelectorAll(".line-comment-box")) c.remove();
      } else {
        result(false, answer.error || r.statusText);
      }
    } catch (e) {
      result(false, String(e));
    } finally {
      for (const b of form.querySelectorAll("button")) b.disabled = false;
      countComments();
    }
  }

  document.addEventListener("submit", (e) => {
    const form = e.target.closest("form[data-api]");
    if (!form) return;
    e.preventDefault();
    submit(form);
  });

  // ---- line comments: the + beside a diff line opens a box under it
  function countComments() {
    const n = document.getElementById("comment-count");
    if (n) n.textContent = String(document.querySelectorAll("textarea.line-comment").length);
  }

  document.addEventListener("click", (e) => {
    const b = e.target.closest("button[data-testid=comment-line]");
    if (!b) return;
    const row = b.closest("tr");
    const next = row.nextElementSibling;
    if (next && next.classList.contains("line-comment-box")) {
      next.querySelector("textarea").focus();
      return;
    }
    const box = document.createElement("tr");
    box.className = "line-comment-box";
    const cell = document.createElement("td");
    cell.colSpan = 4;
    const label = document.createElement("label");
    const where = row.dataset.path + ":" + row.dataset.line;
    label.textContent = "Comment on " + where;
    const t = document.createElement("textarea");
    t.className = "line-comment";
    t.rows = 2;
    t.dataset.path = row.dataset.path;
    t.dataset.line = row.dataset.line;
    t.setAttribute("data-testid", "line-comment");
    t.id = "comment-" + where.replace(/[^A-Za-z0-9_-]/g, "_");
    label.htmlFor = t.id;
    const remove = document.createElement("button");
    remove.type = "button";
    remove.textContent = "Remove";
    remove.addEventListener("click", () => {
      box.remove();
      countComments();
      b.focus();
    });
    cell.append(label, t, remove);
    box.append(cell);
    row.after(box);
    t.focus();
    countComments();
  });

  // ---- the board's filter, applied as it is typed (the server applies it on load too)
  function filterBoard() {
    const text = document.getElementById("filter-text");
    if (!text) return;
    const status = document.getElementById("filter-status").value;
    const kind = document.getElementById("filter-kind").value;
    const words = text.value.toLowerCase().split(/\s+/).filter((w) => w);
    for (const li of document.querySelectorAll("li[data-testid=item]")) {
      const d = li.dataset;
      const ok =
        (!status || d.status === status) &&
        (!kind || d.kind === kind) &&
        words.every((w) => {
          if (w.startsWith("status:")) return d.status === w.slice(7);
          if (w.startsWith("worker:")) return d.worker.toLowerCase() === w.slice(7);
          return d.text.includes(w);
        });
      li.hidden = !ok;
    }
    const q = new URLSearchParams();
    if (text.value) q.set("q", text.value);
    if (status) q.set("status", status);
    if (kind) q.set("kind", kind);
    const s = q.toString();
    history.replaceState(null, "", s ? "/?" + s : "/");
  }

  for (const id of ["filter-text", "filter-status", "filter-kind"]) {
    const el = document.getElementById(id);
    if (el) el.addEventListener("input", filterBoard);
  }
  const filters = document.getElementById("filters");
  if (filters) filters.addEventListener("submit", (e) => {
    e.preventDefault();
    filterBoard();
  });

  // ---- keyboard: Ctrl+Enter in a form's text sends it; / focuses the filter; j/k move
  // between the board's items
  document.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey) && e.target.closest("form[data-api] textarea")) {
      e.preventDefault();
      e.target.closest("form").requestSubmit();
      return;
    }
    const typing = e.target.closest("input, textarea, select");
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "/") {
      const f = document.getElementById("filter-text");
      if (f) {
        e.preventDefault();
        f.focus();
      }
    }
    if (e.key === "j" || e.key === "k") {
      const links = [...document.querySelectorAll("li[data-testid=item]:not([hidden]) a")];
      if (!links.length) return;
      const at = links.indexOf(document.activeElement);
      const next = e.key === "j" ? Math.min(at + 1, links.length - 1) : Math.max(at - 1, 0);
      links[next].focus();
      e.preventDefault();
    }
  });

  const log = document.getElementById("log");
  if (log) log.scrollTop = log.scrollHeight;
  filterBoard();
  openStream();
})();
