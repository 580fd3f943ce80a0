/* sage-mem ui: the page. Plain JavaScript, no build step, no framework.
 *
 * Every piece of memory text reaches the page through textContent (the `h`
 * helper below appends strings as text nodes) or the DOM-building markdown
 * renderer; nothing is ever assigned to innerHTML.
 *
 * The token: `sage-mem ui` prints http://127.0.0.1:PORT/#token=…; the fragment
 * never leaves the browser. It is kept in this origin's localStorage (so a
 * memory opened in a new tab works too) and sent as X-Sage-Token.
 */
"use strict";

(function () {
  const main = document.getElementById("main");
  const TOKEN_KEY = "sage-mem-token:" + location.port;
  const CATEGORIES = ["user", "feedback", "project", "reference"];

  // The link's key, taken from the address (then out of it); `back`: where the address returns.
  function takeToken(back) {
    const match = location.hash.match(/token=([A-Za-z0-9_-]+)/);
    if (!match) return false;
    localStorage.setItem(TOKEN_KEY, match[1]);
    history.replaceState(null, "", location.pathname + (back || "#/"));
    return true;
  }
  takeToken();
  const token = () => localStorage.getItem(TOKEN_KEY) || "";

  // ---------------------------------------------------------------- helpers

  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
      else if (key === "class") node.className = value;
      else if (key === "dataset") Object.assign(node.dataset, value);
      else if (key === "value" || key === "checked") node[key] = value;
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    return add(node, children);
  }

  function add(node, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  // Replace a node's children (arrays are flattened; null and false are skipped).
  function fill(node, ...children) {
    node.replaceChildren();
    return add(node, children);
  }

  const enc = encodeURIComponent;
  // A key pressed while an input method composes a word (pinyin…) is the input method's.
  const composing = (event) => event.isComposing || event.keyCode === 229;
  const memoryHref = (id) => "#/m/" + enc(id);

  function debounce(fn, ms) {
    let timer = 0;
    return function (...args) {
      clearTimeout(timer);
      timer = setTimeout(() => fn.apply(this, args), ms);
    };
  }

  function when(text) {
    if (!text) return "";
    if (/^\d{4}-\d{2}-\d{2}$/.test(text)) return text;
    const date = new Date(text);
    if (Number.isNaN(date.getTime())) return String(text);
    const pad = (n) => String(n).padStart(2, "0");
    return date.getFullYear() + "-" + pad(date.getMonth() + 1) + "-" + pad(date.getDate()) + " " +
      pad(date.getHours()) + ":" + pad(date.getMinutes());
  }

  // Several folders at once: a memory of a shared folder says which, and is not changed here.
  function folderFlag(m) {
    if (!m.folder) return null;
    return h("span", { class: "flag folder", title: m.readOnly ? "shared folder (not changed from this page)" : "your folder" },
      m.folder + (m.readOnly ? " · read-only" : ""));
  }

  function sharedNotice(m, back) {
    return h("div", { class: "notice", id: "shared-note" },
      "From the shared folder ", h("strong", {}, m.folder),
      ": read-only on this page, which changes only your own folder.",
      back ? [" ", h("a", { href: memoryHref(m.id), id: "back-to-memory" }, "Back to the memory")] : null);
  }

  function categoryBadge(category) {
    const name = category || "none";
    const known = CATEGORIES.includes(category) ? category : "other";
    return h("span", { class: "cat cat-" + known }, h("span", { class: "dot" }), name);
  }

  // One message at a time (a new one replaces the last). A message said just before a
  // navigation (Saved, Archived) is shown on the page it leads to, and goes with the next one.
  let toastTimer = 0;
  function toast(message, options) {
    options = options || {};
    const holder = document.getElementById("toast");
    const box = h("div", { class: "msg" + (options.error ? " error" : ""), role: options.error ? "alert" : null, dataset: { view: String(serial) } }, h("span", {}, message));
    if (options.action) {
      box.append(" ", h("button", { class: "small", type: "button", onclick: () => { options.action.run(); box.remove(); } }, options.action.label));
    }
    box.append(h("button", { class: "close", type: "button", "aria-label": "Dismiss", title: "Dismiss (Esc)", onclick: () => box.remove() }, "×"));
    fill(holder, box);
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => box.remove(), options.error ? 8000 : options.action ? 8000 : 4000);
  }

  function dropOldToasts() {
    for (const box of document.querySelectorAll("#toast .msg")) {
      if (Number(box.dataset.view) < serial - 1) box.remove();
    }
  }

  function setTitle(text) {
    document.title = text ? text + " · sage-mem" : "sage-mem";
  }

  class ApiError extends Error {
    constructor(status, data) {
      super((data && data.error) || "request failed (" + status + ")");
      this.status = status;
      this.data = data || {};
    }
  }

  async function api(path, options) {
    options = options || {};
    const sent = token();
    const init = {
      method: options.method || "GET",
      headers: { "X-Sage-Token": sent },
      cache: "no-store",
      credentials: "same-origin",
    };
    if (options.body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(options.body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch (error) {
      offline(true);
      throw new ApiError(0, { error: "sage-mem ui is not reachable (stopped?)", kind: "Unreachable" });
    }
    offline(false);
    if (response.status !== 401) keyNote(false);
    let data = null;
    try { data = await response.json(); } catch (error) { data = null; }
    if (response.status === 401) {
      if (sent === token()) needToken();  // not for a key replaced by a newer link meanwhile
      throw new ApiError(401, data);
    }
    if (!response.ok) throw new ApiError(response.status, data);
    return data;
  }

  // A view that could not load: the server's answer in its place. When the server is not
  // reachable at all, the view stays as it was under the banner (see `offline`).
  function failure(error) {
    if (error.status === 401 || error.status === 0) return;
    fill(main, h("div", { class: "notice error", id: "load-error" }, error.message));
  }

  // The banner over the page while the server cannot be reached: what is shown stays (the
  // search box too), and Retry (or the live feed coming back) loads the view again.
  let unreachable = false;
  function offline(down) {
    const banner = document.getElementById("offline");
    if (down === unreachable) return;
    unreachable = down;
    if (!down) { banner.hidden = true; return; }
    fill(banner, h("span", {}, "sage-mem ui is not reachable: is it still running? What you see may be out of date; nothing was lost."),
      h("button", { type: "button", id: "retry", onclick: () => retry() }, "Retry"));
    banner.hidden = false;
  }

  async function retry() {
    try {
      await api("/api/info");
    } catch (error) {
      toast("Still not reachable. Start it again with sage-mem ui (the link it prints has a new key).", { error: true });
      return;
    }
    if (current && current.refresh) current.refresh("retry");
    else route();
  }

  const unsaved = () => !!(current && current.dirty && current.dirty());

  // The key changed (sage-mem ui started again) while an edit is unsaved: the edit stays on
  // screen under this note until the new link is opened (here, or in another tab).
  function keyNote(show) {
    const note = document.getElementById("need-token");
    if (!show) { if (note && note.dataset.kept) note.remove(); return; }
    if (note) return;
    main.prepend(h("div", { class: "notice warn", id: "need-token", role: "alert", dataset: { kept: "1" } },
      "This page's key is no longer valid: sage-mem ui was started again. Open the link it printed now (in this tab or another); ",
      "your unsaved edit stays here, then save it again."));
  }

  function needToken() {
    if (unsaved()) { keyNote(true); return; }
    current = null;
    serial++;
    fill(main, 
      h("div", { class: "notice warn", id: "need-token" },
        h("h1", {}, "This page needs its key"),
        h("p", {}, "Open the link that ", h("code", {}, "sage-mem ui"), " printed in your terminal (it ends in ",
          h("code", {}, "#token=…"), "). The key changes every time sage-mem ui starts, so that other web pages in your browser cannot read or change your memory.")));
  }

  // ------------------------------------------------------------- the router

  let current = null;
  let serial = 0;

  // A view's requests may answer after the user has moved on: a view draws only while it is shown.
  function viewGuard() {
    const mine = serial;
    return () => mine === serial;
  }

  function setNav(name) {
    document.querySelectorAll("[data-nav]").forEach((a) => {
      a.classList.toggle("active", a.dataset.nav === name);
      if (a.dataset.nav === name) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
    });
    main.classList.toggle("wide", name === "stars");
  }

  const ROUTES = [
    [/^#?\/?$/, () => listView()],
    [/^#\/m\/(.+)$/, (m) => memoryView(decodeURIComponent(m[1]))],
    [/^#\/edit\/(.+)$/, (m) => editorView(decodeURIComponent(m[1]))],
    [/^#\/raw\/(.+)$/, (m) => rawView(decodeURIComponent(m[1]))],
    [/^#\/new$/, () => editorView(null)],
    [/^#\/stars$/, () => starsView()],
    [/^#\/archive$/, () => archiveView()],
    [/^#\/audit$/, () => auditView()],
    [/^#\/runs$/, () => runsView()],
    [/^#\/dream-settings$/, () => dreamSettingsView()],
    [/^#\/runs\/(.+)$/, (m) => runView(decodeURIComponent(m[1]))],
  ];

  function route() {
    if (!token()) { needToken(); return; }
    if (current && current.leave) current.leave();
    current = null;
    serial++;
    dropOldToasts();
    const hash = location.hash || "#/";
    for (const [pattern, make] of ROUTES) {
      const match = hash.match(pattern);
      if (match) {
        current = make(match);
        setNav(current.nav);
        main.focus({ preventScroll: true });
        window.scrollTo(0, 0);
        return;
      }
    }
    notFound(hash);
  }

  function notFound(hash) {
    current = { nav: "" };
    setNav("");
    setTitle("Not found");
    fill(main, h("div", { class: "notice warn", id: "not-found" },
      h("h1", {}, "No such page"),
      h("p", {}, "The address ", h("code", {}, hash), " is not a page of sage-mem ui."),
      h("p", {}, h("a", { href: "#/" }, "Go to the memories"))));
  }

  let lastHash = location.hash;
  let returning = false;
  window.addEventListener("hashchange", () => {
    if (returning) { returning = false; return; }
    if (takeToken(unsaved() ? lastHash : "#/")) {  // a new link opened in this tab
      connectLive();
      if (unsaved()) { keyNote(false); return; }
    }
    if (current && current.dirty && current.dirty() && !confirm("Leave without saving your changes?")) {
      returning = true;
      location.hash = lastHash;
      return;
    }
    lastHash = location.hash;
    route();
  });
  window.addEventListener("beforeunload", (event) => {
    if (current && current.dirty && current.dirty()) event.preventDefault();
  });

  // ------------------------------------------------------------ live events

  let live = null;
  function connectLive() {
    if (!token()) return;
    if (live) live.close();
    const dot = document.getElementById("live");
    const source = new EventSource("/api/events?token=" + enc(token()));
    live = source;
    let connectedBefore = false;
    // The server sends one event per settled change (its watcher waits for quiet): the view
    // asks at once, and the footer and the audit's badge, which cost more, come after it.
    const refresh = debounce((kind) => { if (current && current.refresh) current.refresh(kind); }, 20);
    source.addEventListener("hello", () => {
      dot.classList.add("on");
      liveSays(dot, "Live: changes on disk show up here within a second");
      if (connectedBefore) { refresh("memories"); refreshBadge(); refreshFooter(); }
      offline(false);
      connectedBefore = true;
    });
    source.addEventListener("memories", () => { refresh("memories"); refreshBadge(); refreshFooter(); });
    source.addEventListener("runs", () => { if (current && current.refresh) current.refresh("runs"); });
    source.onerror = () => {
      dot.classList.remove("on");
      liveSays(dot, "Not connected: live updates paused (is sage-mem ui still running?)");
    };
  }

  // The live dot's state, for the eye (its title) and for a screen reader (its name).
  function liveSays(dot, text) {
    dot.title = text;
    dot.setAttribute("aria-label", text);
  }

  // One audit asked for at a time by this page, and at most one more after it (for what changed
  // meanwhile): a folder's first audit takes seconds (a minute at 50,000 memories), and a
  // browser opens six connections to a server at most, so audits asked for after each change
  // would stack up behind it and hold the list's own requests back.
  let auditAsked = null;
  let auditNext = null;
  let auditNextFresh = false;
  function fetchAudit(fresh) {
    if (!auditAsked) {
      auditAsked = api("/api/audit" + (fresh ? "?fresh=1" : "")).finally(() => { auditAsked = null; });
      return auditAsked;
    }
    auditNextFresh = auditNextFresh || !!fresh;
    if (!auditNext) {
      auditNext = auditAsked.catch(() => {}).then(() => {
        const again = auditNextFresh;
        auditNext = null;
        auditNextFresh = false;
        return fetchAudit(again);
      });
    }
    return auditNext;
  }

  // Once changes pause for two seconds: the badge's audit costs 0.1 s of the server's CPU at
  // 20,000 memories (0.2 s at 50,000), and one after each save of a stream of saves (an agent
  // writing, an editor saving every second) shared the server with the next save's way to the list.
  const refreshBadge = debounce(async () => {
    try {
      const data = await fetchAudit(false);
      const badge = document.getElementById("audit-badge");
      badge.textContent = String(data.count);
      badge.hidden = !data.count;
    } catch (error) { /* the badge is a nicety */ }
  }, 2000);

  function size(bytes) {
    if (bytes < 1024) return bytes + " B";
    if (bytes < 1024 * 1024) return (bytes / 1024).toFixed(1) + " KB";
    return (bytes / 1024 / 1024).toFixed(1) + " MB";
  }

  // The footer: which folder, how many memories, how big the library is.
  const refreshFooter = debounce(async () => {
    let info;
    try { info = await api("/api/info"); } catch (error) { return; }
    const where = document.getElementById("foot-folder");
    where.textContent = info.folderShown;
    where.title = info.folder;
    document.getElementById("foot-size").textContent = info.memories + " memories" +
      (info.archived ? " and " + info.archived + " archived" : "") + ", " + size(info.bytes) + " in all";
  }, 700);

  // ------------------------------------------------------------- list view

  const listState = { q: "", categories: new Set(), tags: new Set(), allTags: false, sort: "newest" };
  const PAGE = 100;

  // Arrow keys within a group of chips: the group is one Tab stop (roving tabindex), so Tab
  // goes from the search box past the chips to the results in a few steps.
  function rovingGroup(group, selector) {
    const items = () => Array.from(group.querySelectorAll(selector));
    const settle = () => {
      const all = items();
      const chosen = all.find((n) => n.getAttribute("aria-pressed") === "true") || all[0];
      all.forEach((n) => { n.tabIndex = n === chosen ? 0 : -1; });
    };
    group.addEventListener("keydown", (event) => {
      const all = items();
      const at = all.indexOf(document.activeElement);
      if (at < 0) return;
      const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[event.key];
      const to = event.key === "Home" ? 0 : event.key === "End" ? all.length - 1 : step ? (at + step + all.length) % all.length : -1;
      if (to < 0) return;
      event.preventDefault();
      all.forEach((n, i) => { n.tabIndex = i === to ? 0 : -1; });
      all[to].focus();
    });
    return settle;
  }

  function listView() {
    const showing = viewGuard();
    const input = h("input", {
      id: "search", type: "search", value: listState.q, autocomplete: "off", spellcheck: "false",
      placeholder: "Search memories, in any language  ( / )", "aria-label": "Search memories",
      "aria-controls": "results",
    });
    const categoryChips = h("div", { class: "chips", id: "category-chips", role: "group", "aria-label": "Categories" });
    const tagChips = h("div", { class: "chips", id: "tag-chips", role: "group", "aria-label": "Tags" });
    const count = h("span", { id: "result-count" });
    // The order of the list (a search is best match first): the oldest memory is one choice away.
    const sort = h("select", { id: "sort" },
      h("option", { value: "newest" }, "Newest first"), h("option", { value: "oldest" }, "Oldest first"),
      h("option", { value: "id" }, "By id, A to Z"));
    sort.value = listState.sort;
    sort.addEventListener("change", () => { listState.sort = sort.value; load(); });
    const results = h("ol", { class: "results", id: "results", "aria-live": "polite" });
    const more = h("div", { class: "more" });
    fill(main, h("h1", { class: "sr-only" }, "Memories"), h("div", { class: "searchbar" }, input), h("div", { class: "filters" }, categoryChips, tagChips),
      h("div", { class: "summary-line" }, count), results,
      // After the list in the Tab order: the first result stays three Tabs from the search box.
      h("div", { class: "list-foot" }, more, h("label", { class: "order" }, "Order ", sort)));
    const settleCategories = rovingGroup(categoryChips, "button.chip");
    const settleTags = rovingGroup(tagChips, "button.chip");
    setTitle("Memories");

    let sequence = 0;
    let shownKey = null;  // what the results on screen are for
    let waiting = null;   // the load in flight, for Enter
    let rows = [];

    function key() {
      return JSON.stringify([listState.q.trim() ? listState.q : "", [...listState.categories], [...listState.tags], listState.sort]);
    }

    function params(offset) {
      const out = new URLSearchParams();
      if (listState.q.trim()) out.set("q", listState.q);
      listState.categories.forEach((c) => out.append("category", c));
      listState.tags.forEach((t) => out.append("tag", t));
      if (offset) out.set("offset", String(offset));
      out.set("limit", String(PAGE));
      if (listState.sort !== "newest") out.set("sort", listState.sort);
      return out;
    }

    // The first page again (a new query or chip, or a change on disk); `keep` keeps as many
    // rows as are shown, so a live update does not fold the list back to its first page.
    function load(keep) {
      const mine = ++sequence;
      const wanted = key();
      const upTo = keep && wanted === shownKey ? Math.max(PAGE, rows.length) : PAGE;
      const query = params(0);
      query.set("limit", String(Math.min(1000, upTo)));
      query.set("count", "0");
      const done = api("/api/memories?" + query).then((data) => {
        if (mine !== sequence || !showing()) return;
        shownKey = wanted;
        rows = data.results;
        renderChips(data.facets);
        renderResults(data);
      }, (error) => { if (mine === sequence && showing()) failure(error); });
      waiting = done;
      return done;
    }

    let fetching = false;  // one page at a time: a second click must not fetch the same page
    async function loadMore() {
      if (fetching) return;
      fetching = true;
      const mine = sequence;
      let data;
      try { data = await api("/api/memories?" + params(rows.length)); } catch (error) { toast(error.message, { error: true }); return; } finally { fetching = false; }
      if (mine !== sequence || !showing()) return;
      rows = rows.concat(data.results);
      renderResults(data, true);
    }

    function chip(kind, name, n, selected) {
      const attrs = {
        class: "chip", type: "button", "aria-pressed": String(selected),
        dataset: kind === "category" ? { category: name } : { tag: name },
        onclick: () => {
          listState.q = input.value;  // a search still waiting for its debounce goes with it
          const set = kind === "category" ? listState.categories : listState.tags;
          if (set.has(name)) set.delete(name); else set.add(name);
          load();
        },
      };
      const dot = kind === "category" ? h("span", { class: "dot cat-" + (CATEGORIES.includes(name) ? name : "other") }) : null;
      return h("button", attrs, dot, name, h("span", { class: "count" }, n));
    }

    function renderChips(facets) {
      const focused = document.activeElement;
      const refocus = focused && focused.classList.contains("chip") ? [focused.dataset.category, focused.dataset.tag] : null;
      fill(categoryChips, h("span", { class: "label" }, "Category"),
        facets.categories.map((c) => chip("category", c.name, c.count, listState.categories.has(c.name))));
      const shown = facets.tags.filter((t, i) => listState.allTags || i < 24 || listState.tags.has(t.name));
      const rest = facets.tags.length - shown.length;
      fill(tagChips, h("span", { class: "label" }, "Tags"),
        shown.map((t) => chip("tag", t.name, t.count, listState.tags.has(t.name))),
        rest > 0 ? h("button", { class: "chip", type: "button", id: "more-tags", onclick: () => { listState.allTags = true; renderChips(facets); } }, "+" + rest + " more") : null,
        facets.tags.length ? null : h("span", { class: "muted small" }, "no tags yet"));
      settleCategories();
      settleTags();
      if (refocus) {
        const again = refocus[0] !== undefined ? categoryChips.querySelector('[data-category="' + CSS.escape(refocus[0]) + '"]')
          : refocus[1] !== undefined ? tagChips.querySelector('[data-tag="' + CSS.escape(refocus[1]) + '"]') : null;
        if (again) { again.tabIndex = 0; again.focus(); }
      }
    }

    function card(m) {
      return h("li", { class: "result", dataset: { id: m.id } },
        // The second click of a double click opens nothing: after a double click on "Show more"
        // whose first click's page came back at once, a card sits where the button was.
        h("a", { class: "card", href: memoryHref(m.id), onclick: (event) => { if (event.detail > 1) event.preventDefault(); } },
          // The person's description, always: a dream's summary never stands in for it.
          h("div", { class: "desc" }, m.description),
          h("div", { class: "meta" },
            categoryBadge(m.category),
            h("span", { class: "mono" }, m.id),
            m.tags.map((t) => h("span", { class: "tag" }, t)),
            m.baseline ? h("span", { class: "flag" }, "baseline") : null,
            m.locked ? h("span", { class: "flag" }, "locked") : null,
            folderFlag(m),
            m.project ? h("span", {}, "project " + m.project) : null,
            h("span", {}, m.age || ""),
            h("span", { title: "trust" }, "trust " + Number(m.trust).toFixed(2)))));
    }

    // The count is the true number of matches. While typing, a search ranks only the page it
    // shows (total null, unless all of them fit on it); the count is asked for once typing pauses.
    let total = null;
    let all = 0;
    let hasMore = false;
    function showCount() {
      const filtered = listState.q.trim() || listState.categories.size || listState.tags.size;
      const shown = rows.length;
      const known = total !== null ? total : hasMore ? null : shown;
      count.textContent = filtered
        ? (known === null ? "more than " + shown : known) + " of " + all + " memories match" +
          (known === null ? " (counting…)" : known > shown ? " (" + shown + " shown)" : "")
        : all + " memories" + (known > shown ? " (" + shown + " shown)" : "");
      const left = known === null ? null : known - shown;
      fill(more, left === null || left > 0 ? h("button", { type: "button", id: "load-more", onclick: () => loadMore() },
        left === null ? "Show " + PAGE + " more" : "Show " + Math.min(PAGE, left) + " more (" + left + " not shown)") : null);
    }

    const countLater = debounce(async () => {
      const mine = sequence;
      const query = params(0);
      query.set("limit", "1");
      let data;
      try { data = await api("/api/memories?" + query); } catch (error) { return; }
      if (mine !== sequence || !showing()) return;
      total = data.total;
      showCount();
    }, 250);

    function renderResults(data, appended) {
      sort.parentElement.hidden = !!listState.q.trim();
      all = data.all;
      hasMore = data.more;
      if (data.total !== null) total = data.total;
      else if (!appended) total = null;
      if (!rows.length) {
        fill(results, h("li", { class: "empty" },
          data.all ? "Nothing matches. Try other words, or fewer chips." : "No memories yet. Create one with New memory."));
      } else if (appended) {
        results.append(...data.results.map(card));
      } else {
        fill(results, ...rows.map(card));
      }
      showCount();
      if (total === null && hasMore) countLater();
    }

    function cards() { return Array.from(results.querySelectorAll("a.card")); }

    // Search as you type with no fixed delay: a key asks at once when no search is in flight;
    // keys typed meanwhile wait for it, and then only the newest text is asked for.
    let inFlight = false;
    let queued = false;
    async function typed() {
      if (listState.q === input.value) return;
      if (inFlight) { queued = true; return; }
      inFlight = true;
      listState.q = input.value;
      try { await load(); } finally { inFlight = false; }
      if (queued) { queued = false; typed(); }
    }
    input.addEventListener("input", () => { typed(); });
    input.addEventListener("keydown", async (event) => {
      if (composing(event)) return;
      if (event.key === "Enter") {
        event.preventDefault();
        // The results must be those of what is in the box now, not of the query before it.
        if (listState.q !== input.value || key() !== shownKey) { listState.q = input.value; await load(); }
        else if (waiting) await waiting;
        if (!showing() || key() !== shownKey) return;
        const first = cards()[0];
        if (first) location.hash = first.getAttribute("href");
      } else if (event.key === "ArrowDown") {
        const first = cards()[0];
        if (first) { event.preventDefault(); first.focus(); }
      } else if (event.key === "Escape" && input.value) {
        event.preventDefault();
        input.value = "";
        listState.q = "";
        load();
      }
    });
    results.addEventListener("keydown", (event) => {
      const all = cards();
      const at = all.indexOf(document.activeElement);
      if (at < 0) return;
      if (event.key === "ArrowDown" && at + 1 < all.length) { event.preventDefault(); all[at + 1].focus(); }
      else if (event.key === "ArrowUp") { event.preventDefault(); (at > 0 ? all[at - 1] : input).focus(); }
      else if (event.key === "Home") { event.preventDefault(); all[0].focus(); }
      else if (event.key === "End") { event.preventDefault(); all[all.length - 1].focus(); }
    });
    setTimeout(() => input.focus(), 0);
    load();
    return { nav: "list", refresh: (kind) => { if (kind !== "runs") load(true); } };
  }

  // Escape closes the last open box (a confirmation, a conflict, a message), else the view's own.
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || event.defaultPrevented || composing(event)) return;
    const open = Array.from(document.querySelectorAll("[data-escape]")).filter((n) => !n.hidden && n.offsetParent !== null);
    if (open.length) {
      event.preventDefault();
      const box = open[open.length - 1];
      if (box.onescape) box.onescape(); else box.hidden = true;
      return;
    }
    const message = document.querySelector("#toast .msg");
    if (message) { event.preventDefault(); message.remove(); return; }
    if (current && current.escape) { event.preventDefault(); current.escape(); }
  });

  document.addEventListener("keydown", (event) => {
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
    if (event.key === "/" && !typing) {
      const search = document.getElementById("search");
      if (search) { event.preventDefault(); search.focus(); search.select(); } else if (!typing) { location.hash = "#/"; }
    }
  });

  // ----------------------------------------------------------- memory view

  function fieldList(pairs) {
    return h("dl", { class: "fields" }, pairs.filter(([, v]) => v !== null && v !== undefined && v !== "" && !(Array.isArray(v) && !v.length))
      .map(([k, v]) => [h("dt", {}, k), h("dd", {}, v instanceof Node ? v : Array.isArray(v) ? v.join(", ") : String(v))]));
  }

  function memoryView(id) {
    const showing = viewGuard();
    let shownSha = null;
    async function load() {
      let data;
      try {
        data = await api("/api/memory?id=" + enc(id));
      } catch (error) {
        if (!showing()) return;
        if (error.status === 404) {
          setTitle("Not found");
          const hint = (error.message.match(/did you mean '([^']+)'\?/) || [])[1];
          fill(main, h("div", { class: "notice warn", id: "gone" },
            h("p", {}, "There is no memory ", h("code", {}, id), " (any more)."),
            hint ? h("p", {}, "Did you mean ", h("a", { href: memoryHref(hint) }, hint), "?") : null,
            h("p", {}, h("a", { href: "#/" }, "Back to the list"), " · ", h("a", { href: "#/archive" }, "Look in the archive"))));
          return;
        }
        if (error.data && error.data.kind === "InvalidMemory" && error.data.raw !== undefined) {
          fill(main, rawFileNotice(id, error.data));
          return;
        }
        failure(error);
        return;
      }
      if (!showing()) return;
      const m = data.memory;
      if (m.sha256 === shownSha) return;
      shownSha = m.sha256;
      render(m);
    }

    function render(m) {
      const meta = m.meta || {};
      const actions = h("div", { class: "actions" });
      const kept = openForms(m.id);
      const archiveForm = h("div", { class: "inline-form", hidden: true, id: "archive-form", dataset: { escape: "1", memory: m.id } });
      const renameForm = h("div", { class: "inline-form", hidden: true, id: "rename-form", dataset: { escape: "1", memory: m.id } });
      const deleteForm = h("div", { class: "notice error confirm", hidden: true, id: "delete-confirm", dataset: { escape: "1", memory: m.id } });
      if (m.readOnly) {
        // A shared folder's memory: shown, labelled, never changed from this page.
        actions.append(h("button", { class: "primary", id: "edit", type: "button", disabled: true,
          title: "In the shared folder " + m.folder + ": this page changes only your own folder" }, "Edit"));
      } else if (m.archived) {
        actions.append(h("button", { class: "primary", id: "restore", onclick: () => restore(m.id) }, "Restore"),
          h("button", { class: "danger", id: "delete", type: "button", title: "Delete this archived memory for good (after confirming)",
            onclick: () => { deleteForm.hidden = false; deleteForm.querySelector("#delete-cancel").focus(); } }, "Delete…"));
        // Deleting is a person's act, said plainly and confirmed, and only of the version shown.
        const go = async () => {
          try {
            await api("/api/delete", { method: "POST", body: { id: m.id, expectedSha256: m.sha256 } });
            toast("Deleted " + m.id);
            location.hash = "#/archive";
          } catch (error) { deleteForm.hidden = true; refused(error, "deleted"); }
        };
        deleteForm.append(
          h("p", {}, "Delete ", h("span", { class: "mono" }, m.id), " for good? The file is removed from the folder; this page cannot bring it back (a copy in git or a backup can). Restore keeps it instead."),
          h("div", { class: "actions" },
            h("button", { type: "button", class: "danger solid", id: "delete-go", onclick: go }, "Delete for good"),
            h("button", { type: "button", id: "delete-cancel", onclick: () => { deleteForm.hidden = true; } }, "Cancel")));
      } else {
        actions.append(
          m.locked
            ? h("button", { class: "primary", id: "edit", type: "button", disabled: true, title: "Locked (locked: true): no tool changes it. Edit the file itself to unlock it." }, "Edit")
            : h("a", { class: "button primary", id: "edit", href: "#/edit/" + enc(m.id) }, "Edit"),
          h("button", { id: "rename", type: "button", disabled: m.locked, title: m.locked ? "locked memories cannot be renamed" : "a new id (file name); links to it follow",
            onclick: () => { renameForm.hidden = false; renameForm.querySelector("input").focus(); } }, "Rename…"),
          h("button", { class: "danger", id: "archive", disabled: m.locked, title: m.locked ? "locked memories cannot be archived" : "move it to archive/ (reversible)",
            onclick: () => { archiveForm.hidden = false; archiveForm.querySelector("input").focus(); } }, "Archive…"));
        const newId = h("input", { id: "rename-id", value: m.id, "aria-label": "New id", autocomplete: "off", spellcheck: "false", class: "mono" });
        const renameGo = async () => {
          const target = newId.value.trim();
          if (!target || target === m.id) { newId.focus(); return; }
          try {
            const result = await api("/api/rename", { method: "POST", body: { id: m.id, newId: target, expectedSha256: m.sha256 } });
            toast("Renamed " + result.oldId + " to " + result.id + (result.relinked.length ? "; links updated in " + result.relinked.length + " memor" + (result.relinked.length === 1 ? "y" : "ies") : "") +
              (result.left.length ? "; not updated: " + result.left.join("; ") : ""), result.left.length ? { error: true } : {});
            location.hash = memoryHref(result.id);
          } catch (error) { refused(error, "renamed"); }
        };
        newId.addEventListener("keydown", (e) => { if (composing(e)) return; if (e.key === "Enter") renameGo(); if (e.key === "Escape") { e.preventDefault(); renameForm.hidden = true; } });
        renameForm.append(newId, h("button", { class: "primary", id: "rename-confirm", type: "button", onclick: renameGo }, "Rename"),
          h("button", { type: "button", onclick: () => { renameForm.hidden = true; } }, "Cancel"),
          h("span", { class: "muted small" }, "The file moves (never over another); [[links]], markdown links and supersedes that name it follow."));
        const reason = h("input", { id: "archive-reason", placeholder: "Why? (kept in the archived file)", maxlength: "300" });
        const go = async () => {
          if (!reason.value.trim()) { reason.focus(); toast("Say why it is archived.", { error: true }); return; }
          try {
            const result = await api("/api/archive", { method: "POST", body: { id: m.id, reason: reason.value, expectedSha256: m.sha256 } });
            toast("Archived as " + result.memory.id, { action: { label: "Undo", run: () => restore(result.memory.id) } });
            location.hash = memoryHref(result.memory.id);
          } catch (error) { refused(error, "archived"); }
        };
        reason.addEventListener("keydown", (e) => { if (composing(e)) return; if (e.key === "Enter") go(); if (e.key === "Escape") { e.preventDefault(); archiveForm.hidden = true; } });
        archiveForm.append(reason, h("button", { class: "danger solid", id: "archive-confirm", onclick: go }, "Archive"),
          h("button", { onclick: () => { archiveForm.hidden = true; } }, "Cancel"),
          h("span", { class: "muted small" }, "Nothing is deleted: it moves to archive/ and can be restored."));
      }
      const body = h("div", { class: "markdown", id: "memory-body" });
      const reach = {};
      (m.links || []).forEach((l) => { reach[l.kind + "\u0000" + l.written] = l; });
      body.append(window.SageMarkdown.render(m.body, {
        base: m.id.replace(/^archive\//, ""),
        // Where each link goes, as the server resolved it (the audit's rules): broken ones look broken.
        resolve: (kind, written) => reach[kind + "\u0000" + written] || null,
      }));
      setTitle(m.description || m.id);
      fill(main, 
        h("div", { class: "memory-head" },
          h("div", {},
            h("h1", { id: "memory-title" }, m.description),
            h("div", { class: "id", id: "memory-id" }, m.id)),
          actions),
        archiveForm,
        renameForm,
        deleteForm,
        m.readOnly ? sharedNotice(m, false) : null,
        m.archived ? h("div", { class: "notice warn", id: "archived-note" },
          "Archived", meta.archived ? " " + when(meta.archived) : "", meta.archiveReason ? ": " + meta.archiveReason : "",
          meta.supersededBy ? [" (superseded by ", h("a", { href: memoryHref(String(meta.supersededBy)) }, String(meta.supersededBy)), ")"] : null) : null,
        m.problems && m.problems.length ? h("div", { class: "notice warn" }, h("strong", {}, "Problems: "), m.problems.join("; ")) : null,
        h("div", { class: "columns" },
          h("div", { class: "panel" }, m.body.trim() ? body : h("p", { class: "muted" }, "(no body)")),
          h("aside", { class: "panel" }, fieldList([
            ["category", categoryBadge(m.category)],
            ["name", m.name],
            ["summary", m.summary],
            ["aliases", m.aliases],
            ["tags", m.tags],
            ["trust", Number(m.trust).toFixed(2)],
            ["baseline", m.baseline ? "yes (priority " + m.baselinePriority + ")" : null],
            ["project", m.project],
            ["supersedes", m.supersedes.length ? h("span", {}, m.supersedes.map((s, i) => [i ? ", " : "", h("a", { href: memoryHref(s) }, s)])) : null],
            ["locked", m.locked ? "yes" : null],
            ["created", when(m.created)],
            ["updated", m.updated ? when(m.updated) + (m.age ? " (" + m.age + ")" : "") : null],
            ["file", h("span", { class: "mono small" }, m.path)],
            ["sha256", h("span", { class: "mono small", title: m.sha256 }, m.sha256.slice(0, 16) + "…")],
          ]), backlinkList(m))));
      reopen(kept);
    }

    // A form the person has open outlives a redraw (a change on disk redraws the memory): it
    // opens again with what was typed and keeps the focus, and acts on the version now shown.
    function openForms(memoryId) {
      return ["archive-form", "rename-form", "delete-confirm"].map((formId) => document.getElementById(formId))
        .filter((form) => form && !form.hidden && form.dataset.memory === memoryId)
        .map((form) => {
          const input = form.querySelector("input");
          const focused = form.contains(document.activeElement) ? document.activeElement : null;
          return { formId: form.id, value: input ? input.value : null, focusedId: focused && focused.id,
            start: input ? input.selectionStart : null, end: input ? input.selectionEnd : null };
        });
    }
    function reopen(kept) {
      for (const was of kept) {
        const form = document.getElementById(was.formId);
        if (!form) continue;
        form.hidden = false;
        const input = form.querySelector("input");
        if (input && was.value !== null) input.value = was.value;
        const focus = was.focusedId ? document.getElementById(was.focusedId) : null;
        if (!focus) continue;
        focus.focus();
        if (focus === input && was.start !== null) input.setSelectionRange(was.start, was.end);
      }
    }

    // Archive and Rename send the sha256 of the version shown: a file changed since is refused
    // (409, nothing moved), and the person sees the new version before acting on it.
    function refused(error, done) {
      if (error.status !== 409) { toast(error.message, { error: true }); return; }
      toast("This memory changed on disk since the page showed it: nothing was " + done + ". Reload it to see what changed, then try again.",
        { error: true, action: { label: "Reload", run: () => { shownSha = null; load(); } } });
    }

    function backlinkList(m) {
      const from = m.backlinks || [];
      return h("div", { id: "backlinks", class: "backlinks" },
        h("h2", {}, "Linked from" + (from.length ? " (" + from.length + ")" : "")),
        from.length ? h("ul", {}, from.map((b) => h("li", { dataset: { id: b.id, kind: b.kind } },
          h("a", { href: memoryHref(b.id) }, b.description || b.id),
          b.kind === "supersedes" ? h("span", { class: "muted small" }, " supersedes this") : null,
          h("div", { class: "mono small muted" }, b.id))))
          : h("p", { class: "muted small" }, "No memory links here."));
    }

    load();
    return { nav: navFor(id), refresh: (kind) => { if (kind !== "runs") load(); } };
  }

  function navFor(id) { return id.startsWith("archive/") ? "archive" : "list"; }

  async function restore(id) {
    try {
      const result = await api("/api/restore", { method: "POST", body: { id: id } });
      toast("Restored " + result.memory.id);
      location.hash = memoryHref(result.memory.id);
    } catch (error) { toast(error.message, { error: true }); }
  }

  // ---------------------------------------------------------------- editor

  const splitList = (text) => text.split(",").map((s) => s.trim()).filter(Boolean);

  // A memory as the editor shows it: the same shape as the form's values().
  function fieldsOf(m) {
    return {
      description: m.description || "", category: m.category || "", name: m.name || "", summary: m.summary || "",
      project: m.project || "", tags: m.tags || [], aliases: m.aliases || [], supersedes: m.supersedes || [],
      trust: m.trust === undefined ? null : m.trust, baseline: !!m.baseline, baselinePriority: m.baselinePriority || 0,
      body: (m.body || "").replace(/^\n/, ""),
    };
  }

  function shownValue(value) {
    if (Array.isArray(value)) return value.length ? value.join(", ") : "(none)";
    if (value === true) return "yes";
    if (value === false) return "no";
    if (value === null || value === undefined || value === "") return "(empty)";
    return String(value);
  }

  function versionText(v) {
    const lines = [
      "description: " + (v.description || ""),
      "category: " + (v.category || ""),
      "name: " + (v.name || ""),
      "summary: " + (v.summary || ""),
      "tags: " + (v.tags || []).join(", "),
      "aliases: " + (v.aliases || []).join(", "),
      "trust: " + (v.trust === undefined || v.trust === null ? "" : Number(v.trust).toFixed(2)),
      "project: " + (v.project || ""),
      "baseline: " + (v.baseline ? "yes (priority " + (v.baselinePriority || 0) + ")" : "no"),
      "supersedes: " + (v.supersedes || []).join(", "),
      "",
      "",
    ];
    return lines.join("\n") + (v.body || "").replace(/^\n+/, "");
  }

  // A line diff (longest common subsequence) for the conflict view; bodies are small.
  function lineDiff(a, b) {
    const x = a.split("\n");
    const y = b.split("\n");
    if (x.length * y.length > 4e6) return [["@", "too long to compare line by line"]];
    const n = x.length;
    const m = y.length;
    const table = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) {
      table[i][j] = x[i] === y[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
    }
    const out = [];
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && x[i] === y[j]) { out.push([" ", x[i]]); i++; j++; }
      else if (i < n && (j >= m || table[i + 1][j] >= table[i][j + 1])) { out.push(["-", x[i]]); i++; }
      else { out.push(["+", y[j]]); j++; }
    }
    return out;
  }

  function diffBlock(lines, id) {
    const kinds = { "+": "add", "-": "del", "@": "hunk", " ": "ctx" };
    return h("div", { class: "diff", id: id || null },
      lines.map(([kind, text]) => h("div", { class: kinds[kind] || "ctx" }, text)));
  }

  function editorView(id) {
    const showing = viewGuard();
    const creating = id === null;
    let original = null;
    let dirty = false;
    let liveNote = null;
    const form = h("form", { class: "editor", id: "editor", novalidate: true });
    const conflict = h("div", { id: "conflict", hidden: true, class: "notice warn conflict", dataset: { escape: "1" } });
    const problem = h("div", { id: "editor-error", hidden: true, class: "notice error" });

    function input(name, label, attrs, help) {
      const control = attrs && attrs.tag === "select" ? attrs.node : h("input", Object.assign({ name: name, id: "f-" + name }, attrs || {}));
      return h("label", { class: "field" }, h("span", {}, label), control, help ? h("small", { class: "muted" }, help) : null);
    }

    function build(m) {
      const categories = CATEGORIES.slice();
      if (m && m.category && !categories.includes(m.category)) categories.push(m.category);
      const select = h("select", { name: "category", id: "f-category" },
        h("option", { value: "" }, "(none)"), categories.map((c) => h("option", { value: c }, c)));
      select.value = (m && m.category) || "";
      const body = h("textarea", { name: "body", id: "f-body", class: "body-input", spellcheck: "true" });
      body.value = m ? m.body.replace(/^\n/, "") : "";
      fill(form, 
        creating ? input("id", "Id (the file name, without .md)", { required: true, placeholder: "user_cat or project/api/auth_flow", autocomplete: "off" },
          "Convention: start with the category, e.g. feedback_tests_first") : null,
        input("description", "Description (one line saying what this memory is)", { required: true, value: m ? m.description : "" }),
        h("div", { class: "grid2" },
          input("category", "Category", { tag: "select", node: select }),
          input("name", "Name", { value: (m && m.name) || "" }),
          input("summary", "Summary (short display text)", { value: (m && m.summary) || "" }),
          input("project", "Project (empty: everywhere)", { value: (m && m.project) || "" }),
          input("tags", "Tags (comma-separated)", { value: m ? m.tags.join(", ") : "" }),
          input("aliases", "Aliases (other wordings that should find it)", { value: m ? m.aliases.join(", ") : "" }),
          input("trust", "Trust (0 to 1)", { type: "number", min: "0", max: "1", step: "0.05", value: m ? String(m.trust) : "0.5" }),
          input("supersedes", "Supersedes (ids, comma-separated)", { value: m ? m.supersedes.join(", ") : "" }),
          h("label", { class: "check" }, h("input", { type: "checkbox", name: "baseline", id: "f-baseline", checked: !!(m && m.baseline) }),
            "Baseline: inject at the start of every session"),
          input("baselinePriority", "Baseline priority (higher first)", { type: "number", step: "1", value: m ? String(m.baselinePriority) : "0" })),
        h("label", { class: "field" }, h("span", {}, "Body (markdown)"), body),
        problem,
        conflict,
        h("div", { class: "actions" },
          h("button", { class: "primary", type: "submit", id: "save" }, creating ? "Create" : "Save"),
          h("a", { class: "button", href: creating ? "#/" : memoryHref(id), onclick: () => { dirty = false; } }, "Cancel"),
          h("span", { class: "muted small" }, "Ctrl+S saves")));
      dirty = false;
    }

    function values() {
      const get = (name) => { const node = form.elements.namedItem(name); return node ? node.value : ""; };
      // A list whose text is as shown is the list as it was: an item holding a comma stays one.
      const shown = original ? fieldsOf(original) : null;
      const list = (name) => (shown && get(name) === shown[name].join(", ") ? shown[name].slice() : splitList(get(name)));
      return {
        description: get("description").trim(),
        category: get("category"),
        name: get("name").trim(),
        summary: get("summary").trim(),
        project: get("project").trim(),
        tags: list("tags"),
        aliases: list("aliases"),
        supersedes: list("supersedes"),
        trust: get("trust") === "" ? null : Number(get("trust")),
        baseline: form.elements.namedItem("baseline").checked,
        baselinePriority: get("baselinePriority") === "" ? 0 : Number(get("baselinePriority")),
        body: get("body"),
      };
    }

    // Only what changed is sent: the store then touches only those keys of the file.
    function changes(v, base) {
      const out = {};
      const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
      if (!base) {
        for (const [k, value] of Object.entries(v)) {
          if (value === "" || value === null || (Array.isArray(value) && !value.length)) continue;
          if (k === "baseline" && !value) continue;
          if (k === "baselinePriority" && !v.baseline) continue;
          if (k === "trust" && value === 0.5) continue;
          out[k] = value;
        }
        return out;
      }
      const before = fieldsOf(base);
      for (const k of Object.keys(v)) {
        if (!same(v[k], before[k])) out[k] = v[k];
      }
      if (out.category === "") delete out.category;
      if (out.body !== undefined && out.body.trim() === before.body.trim()) delete out.body;
      return out;
    }

    async function save(extra) {
      problem.hidden = true;
      const v = values();
      if (creating && !form.elements.namedItem("id").value.trim()) { showProblem("Give the memory an id."); return; }
      if (!v.description) { showProblem("A memory needs a description."); return; }
      const payload = Object.assign(changes(v, original), extra || {});
      if (creating) {
        payload.id = form.elements.namedItem("id").value.trim();
        payload.create = true;
      } else {
        if (Object.keys(payload).filter((k) => k !== "allowSecret").length === 0) {
          dirty = false;
          toast("Nothing changed.");
          location.hash = memoryHref(id);
          return;
        }
        payload.id = id;
        payload.expectedSha256 = original.sha256;
      }
      const button = document.getElementById("save");
      button.disabled = true;
      try {
        const result = await api("/api/memory", { method: "POST", body: payload });
        dirty = false;
        toast((creating ? "Created " : "Saved ") + result.memory.id);
        location.hash = memoryHref(result.memory.id);
      } catch (error) {
        if (error.status === 409 && !creating) showConflict(v, error.data.current);
        else if (error.data && error.data.kind === "SecretRefused") {
          showProblem(error.message, h("button", { id: "save-anyway", type: "button", onclick: () => save({ allowSecret: true }) }, "It is not a secret: save anyway"));
        } else showProblem(error.message);
      } finally {
        button.disabled = false;
      }
    }

    function showProblem(message, extra) {
      fill(problem, h("span", {}, message), extra ? [" ", extra] : null);
      problem.hidden = false;
    }

    // A save that met a change on disk: merge three-way from the version this editor opened
    // (`original`), so that only what both sides changed needs the person's choice.
    async function showConflict(mine, disk) {
      if (liveNote) { liveNote.remove(); liveNote = null; }
      let merge = null;
      if (disk) {
        try {
          merge = await api("/api/merge", { method: "POST", body: { id: id, base: fieldsOf(original), mine: mine } });
        } catch (error) {
          if (error.status !== 404) { showProblem(error.message); return; }
        }
      }
      if (!showing()) return;
      if (!merge) {
        fill(conflict,
          h("strong", {}, "This memory was removed or archived on disk since you opened it."),
          h("p", {}, "Nothing was saved."),
          h("div", { class: "versions" }, h("div", {}, h("h3", {}, "Your version (not saved)"), h("pre", { id: "version-mine" }, versionText(mine)))),
          h("div", { class: "actions" }, h("button", { type: "button", onclick: () => { conflict.hidden = true; } }, "Keep editing")));
      } else {
        renderMerge(mine, merge);
      }
      conflict.hidden = false;
      conflict.scrollIntoView({ block: "nearest" });
    }

    function renderMerge(mine, merge) {
      const disk = merge.current;
      const picks = {};
      const clashes = merge.body.chunks.filter((chunk) => chunk.disk !== undefined);
      const open = merge.conflicts.length + clashes.length;
      const saveButton = h("button", { type: "button", class: "primary", id: "save-merge", onclick: () => saveMerge() });
      const picked = () => Object.keys(picks).length;
      const update = () => {
        const left = open - picked();
        saveButton.disabled = left > 0;
        saveButton.textContent = left > 0 ? "Choose a side for " + left + " more" : open ? "Save with these choices" : "Save the merge";
      };

      function pick(key, choices) {
        return h("div", { class: "pick-choices", role: "radiogroup" }, choices.map(([value, label, shown]) =>
          h("label", { class: "pick-choice" },
            h("input", { type: "radio", name: "pick-" + key, id: "pick-" + key + "-" + value, value: value,
              onchange: () => { picks[key] = value; update(); } }),
            h("span", {}, label), shown)));
      }

      const taken = [];
      if (merge.fromMine.length) taken.push(h("li", {}, "From your edit: " + merge.fromMine.join(", ")));
      if (merge.fromDisk.length) taken.push(h("li", {}, "From the disk: " + merge.fromDisk.join(", ")));
      if (merge.combined.length) taken.push(h("li", {}, "Combined, both sides' additions and removals: " + merge.combined.join(", ")));
      if (merge.body.from && merge.body.clean) {
        taken.push(h("li", {}, { mine: "Body: from your edit", disk: "Body: from the disk", both: "Body: both sides' edits, merged line by line" }[merge.body.from]));
      }

      const fieldRows = merge.conflicts.map((c) => h("fieldset", { class: "pick", dataset: { field: c.field } },
        h("legend", {}, c.field, h("span", { class: "muted small" }, " — changed on both sides; was " + shownValue(c.base))),
        pick(c.field, [["mine", "Mine: ", h("span", { class: "mono" }, shownValue(c.mine))],
          ["disk", "On disk: ", h("span", { class: "mono" }, shownValue(c.disk))]])));

      let clashIndex = 0;
      const bodyParts = merge.body.clean ? [] : merge.body.chunks.map((chunk) => {
        if (chunk.disk === undefined) return h("pre", { class: "merged-lines" }, chunk.lines.join("\n"));
        const key = "body-" + clashIndex++;
        return h("fieldset", { class: "pick clash", dataset: { clash: key } },
          h("legend", {}, "Body: these lines changed on both sides"),
          h("div", { class: "versions" },
            h("div", {}, h("h3", {}, "Mine"), h("pre", { class: "clash-mine" }, chunk.mine.join("\n") || "(removed)")),
            h("div", {}, h("h3", {}, "On disk"), h("pre", { class: "clash-disk" }, chunk.disk.join("\n") || "(removed)"))),
          pick(key, [["mine", "Mine"], ["disk", "On disk"], ["both", "Both, mine first"]]));
      });

      const chooseAll = (side) => {
        for (const node of conflict.querySelectorAll('input[type=radio][value="' + side + '"]')) {
          node.checked = true;
          picks[node.name.slice(5)] = side;
        }
        update();
      };

      function final() {
        const out = Object.assign({}, merge.merged);
        for (const c of merge.conflicts) out[c.field] = picks[c.field] === "disk" ? c.disk : c.mine;
        if (!merge.body.clean) {
          const lines = [];
          let i = 0;
          for (const chunk of merge.body.chunks) {
            if (chunk.disk === undefined) { lines.push(...chunk.lines); continue; }
            const choice = picks["body-" + i++];
            if (choice !== "disk") lines.push(...chunk.mine);
            if (choice !== "mine") lines.push(...chunk.disk);
          }
          out.body = lines.join("\n");
        }
        return out;
      }

      // The merge becomes the form, over the disk's version as the new base: the save sends
      // only what differs from the disk, expecting the disk's sha (a third change is caught again).
      function saveMerge() {
        if (picked() < open) return;
        original = disk;
        conflict.hidden = true;
        fillChanged(final());
        dirty = true;
        save();
      }

      const mineText = versionText(mine);
      const diskText = versionText(fieldsOf(disk));
      fill(conflict,
        h("strong", {}, "This memory changed on disk since you opened it."),
        h("p", {}, open
          ? "Nothing was saved yet. What only one side changed is merged; choose a side where both changed the same thing."
          : "Nothing was saved yet. The two edits do not overlap: saving keeps both."),
        taken.length ? h("ul", { id: "merge-taken", class: "merge-taken" }, taken) : null,
        merge.body.clean && merge.body.from === "both" ? h("details", {}, h("summary", {}, "The merged body"),
          h("pre", { id: "merged-body", class: "merged-lines" }, merge.merged.body)) : null,
        fieldRows.length ? h("div", { id: "merge-fields" }, fieldRows) : null,
        bodyParts.length ? h("div", { id: "merge-body" }, bodyParts) : null,
        h("details", { class: "both-versions" }, h("summary", {}, "Both versions in full"),
          h("div", { class: "versions" },
            h("div", {}, h("h3", {}, "Your version (not saved)"), h("pre", { id: "version-mine" }, mineText)),
            h("div", {}, h("h3", {}, "On disk now"), h("pre", { id: "version-disk" }, diskText))),
          h("h3", {}, "What differs (− yours, + on disk)"),
          diffBlock(lineDiff(mineText, diskText).filter((l, i, all) => l[0] !== " " || all.length < 40), "conflict-diff")),
        h("div", { class: "actions" },
          saveButton,
          open ? h("button", { type: "button", id: "all-mine", onclick: () => chooseAll("mine") }, "Mine wherever both changed") : null,
          open ? h("button", { type: "button", id: "all-disk", onclick: () => chooseAll("disk") }, "The disk's wherever both changed") : null,
          h("button", { type: "button", id: "take-disk", onclick: () => { original = disk; build(disk); conflict.hidden = true; toast("Loaded the version on disk."); } }, "Drop my edit, use the disk's"),
          h("button", { type: "button", onclick: () => { conflict.hidden = true; } }, "Keep editing")));
      update();
    }

    function fillChanged(v) {
      build(original);
      const set = (name, value) => { const node = form.elements.namedItem(name); if (node) node.value = value; };
      set("description", v.description); set("category", v.category); set("name", v.name); set("summary", v.summary);
      set("project", v.project); set("tags", v.tags.join(", ")); set("aliases", v.aliases.join(", "));
      set("supersedes", v.supersedes.join(", ")); set("trust", v.trust === null ? "" : String(v.trust));
      form.elements.namedItem("baseline").checked = v.baseline; set("baselinePriority", String(v.baselinePriority)); set("body", v.body);
    }

    form.addEventListener("submit", (event) => { event.preventDefault(); save(); });
    form.addEventListener("input", () => { dirty = true; });
    const keys = (event) => {
      if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "s") { event.preventDefault(); save(); }
    };
    document.addEventListener("keydown", keys);

    setTitle(creating ? "New memory" : "Edit " + id);
    fill(main, h("h1", {}, creating ? "New memory" : "Edit "), form);
    if (creating) {
      build(null);
    } else {
      main.firstChild.append(h("span", { class: "mono" }, id));
      api("/api/memory?id=" + enc(id)).then((data) => {
        if (!showing()) return;
        original = data.memory;
        if (original.readOnly) {
          setTitle("Shared: " + id);
          fill(main, sharedNotice(original, true));
          return;
        }
        if (original.locked) {
          setTitle("Locked: " + id);
          fill(main, h("div", { class: "notice warn", id: "locked-note" },
            h("h1", {}, "This memory is locked"),
            h("p", {}, "It says ", h("code", {}, "locked: true"), ", so no tool, agent or dream run may change or archive it, this page included. To change it, remove that line in ",
              h("span", { class: "mono" }, original.path), " with a text editor."),
            h("p", {}, h("a", { class: "button", href: memoryHref(id), id: "back-to-memory" }, "Back to the memory"))));
          return;
        }
        build(original);
        setTimeout(() => form.elements.namedItem("description").focus(), 0);
      }).catch((error) => { if (showing()) failure(error); });
    }

    async function checkDisk() {
      if (creating || !original) return;
      let disk = null;
      try { disk = (await api("/api/memory?id=" + enc(id))).memory; } catch (error) { if (error.status !== 404) return; }
      if (!showing()) return;
      if (disk && disk.sha256 === original.sha256) return;
      if (!conflict.hidden || liveNote) return;
      liveNote = h("div", { class: "notice warn", id: "changed-on-disk" },
        disk ? "This memory just changed on disk. " : "This memory was just removed or archived on disk. ",
        h("button", { type: "button", id: "compare", onclick: () => showConflict(values(), disk) }, "Compare the versions"));
      form.prepend(liveNote);
    }

    // Escape: out of the editor (asking first, on the page, when something is unsaved).
    function escape() {
      if (!dirty) { location.hash = creating ? "#/" : memoryHref(id); return; }
      let box = document.getElementById("leave-confirm");
      if (box) { box.querySelector("button").focus(); return; }
      box = h("div", { class: "notice warn confirm", id: "leave-confirm", dataset: { escape: "1" } },
        h("p", {}, "Leave without saving your changes?"),
        h("div", { class: "actions" },
          h("button", { type: "button", class: "danger solid", id: "leave-anyway", onclick: () => { dirty = false; location.hash = creating ? "#/" : memoryHref(id); } }, "Leave without saving"),
          h("button", { type: "button", id: "keep-editing", onclick: () => box.remove() }, "Keep editing")));
      box.onescape = () => box.remove();
      form.prepend(box);
      box.querySelector("#keep-editing").focus();
    }

    return {
      nav: "list",
      dirty: () => dirty,
      escape: escape,
      refresh: (kind) => { if (kind !== "runs") checkDisk(); },
      leave: () => document.removeEventListener("keydown", keys),
    };
  }

  // A file that does not read as a memory (its YAML does not parse): shown, and fixable as text.
  function rawFileNotice(id, data) {
    setTitle("Cannot read " + id);
    return h("div", { class: "notice error", id: "unreadable" },
      h("h1", {}, "This file cannot be read as a memory"),
      h("p", { class: "mono small" }, data.error),
      h("p", {}, "Nothing was changed. You can fix it here, as text: the file is saved exactly as you leave it."),
      h("p", {}, h("a", { class: "button primary", id: "edit-raw", href: "#/raw/" + enc(data.id || id) }, "Edit the file as text")));
  }

  // A textarea shows every line ending as LF (its value turns CRLF and a lone CR into LF). What
  // is saved gives each line the ending it had in the file (a line the person did not touch
  // keeps its CRLF or its lone CR), and a new line the file's usual one: the person's edit is
  // the only change.
  function withEndings(edited, before) {
    if (!before.includes("\r")) return edited;
    const kept = new Map();
    const counts = { "\r\n": 0, "\r": 0, "\n": 0 };
    for (const match of before.matchAll(/([^\r\n]*)(\r\n|\r|\n|$)/g)) {
      if (!match[0]) break;
      const ending = match[2];
      if (ending) counts[ending]++;
      if (!kept.has(match[1])) kept.set(match[1], []);
      kept.get(match[1]).push(ending);
    }
    const usual = ["\n", "\r\n", "\r"].reduce((best, e) => counts[e] > counts[best] ? e : best);
    const lines = edited.split("\n");
    return lines.map((line, i) => {
      if (i === lines.length - 1) return line;
      const endings = kept.get(line);
      const ending = endings && endings.length ? endings.shift() : usual;
      return line + (ending || usual);
    }).join("");
  }

  // The raw editor: the whole file as text, frontmatter included, saved exactly as written.
  function rawView(id) {
    const showing = viewGuard();
    let original = null;
    let dirty = false;
    setTitle("Edit the file " + id);
    const area = h("textarea", { id: "raw-text", class: "body-input raw-input", spellcheck: "false", "aria-label": "The file's text" });
    const problem = h("div", { id: "raw-problem", class: "notice error", hidden: true });
    const conflict = h("div", { id: "raw-conflict", class: "notice warn", hidden: true, dataset: { escape: "1" } });
    const save = h("button", { class: "primary", id: "raw-save", type: "button", onclick: () => write() }, "Save the file");
    fill(main, h("h1", {}, "Edit the file ", h("span", { class: "mono" }, id)),
      h("p", { class: "muted" }, "The whole file as it is on disk, frontmatter included. Save writes exactly this text, nothing added or tidied; a text that would not read back as a memory is not saved."),
      problem, conflict, area,
      h("div", { class: "actions" }, save, h("a", { class: "button", href: memoryHref(id), id: "raw-cancel", onclick: () => { dirty = false; } }, "Cancel"),
        h("span", { class: "muted small" }, "Ctrl+S saves · Esc leaves")));
    area.addEventListener("input", () => { dirty = original !== null && withEndings(area.value, original.text) !== original.text; });

    function showProblem(found) {
      if (!found) { problem.hidden = true; return; }
      const where = found.line ? " (line " + found.line + (found.column ? ", column " + found.column : "") + ")" : "";
      fill(problem, h("strong", {}, "Does not parse" + where + ": "), h("span", { class: "mono" }, found.message),
        found.line ? [" ", h("button", { type: "button", id: "raw-goto", onclick: () => goTo(found.line) }, "Go to line " + found.line)] : null);
      problem.hidden = false;
    }

    function goTo(line) {
      const lines = area.value.split("\n");
      const start = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
      area.focus();
      area.setSelectionRange(start, start + (lines[line - 1] || "").length);
    }

    async function load() {
      let data;
      try { data = await api("/api/raw?id=" + enc(id)); } catch (error) { if (showing()) failure(error); return; }
      if (!showing()) return;
      if (data.locked) {
        fill(main, h("div", { class: "notice warn", id: "locked-note" }, "This memory is locked (locked: true): no tool may change it, this page included. ",
          h("a", { href: memoryHref(id) }, "Back to the memory")));
        return;
      }
      original = data;
      area.value = data.text;
      dirty = false;
      showProblem(data.problem);
      setTimeout(() => { if (data.problem && data.problem.line) goTo(data.problem.line); else area.focus(); }, 0);
    }

    async function write(extra) {
      if (!original) return;
      const text = withEndings(area.value, original.text);
      if (text === original.text) { toast("Nothing changed."); return; }
      save.disabled = true;
      try {
        const result = await api("/api/raw", { method: "POST", body: Object.assign({ id: id, text: text, expectedSha256: original.sha256 }, extra || {}) });
        dirty = false;
        toast("Saved " + result.memory.id);
        location.hash = memoryHref(result.memory.id);
      } catch (error) {
        if (error.status === 409) {
          fill(conflict, h("strong", {}, "The file changed on disk since you opened it. "), "Nothing was saved; your text is still here. ",
            h("button", { type: "button", id: "raw-reload", onclick: () => { conflict.hidden = true; load(); } }, "Load the version on disk (drops your text)"),
            " ", h("button", { type: "button", onclick: () => { conflict.hidden = true; } }, "Keep editing"));
          conflict.hidden = false;
        } else if (error.data && error.data.kind === "SecretRefused") {
          fill(problem, h("span", {}, error.message), " ", h("button", { type: "button", id: "raw-save-anyway", onclick: () => write({ allowSecret: true }) }, "It is not a secret: save anyway"));
          problem.hidden = false;
        } else {
          showProblem({ message: error.message, line: (error.message.match(/line (\d+)/) || [])[1] ? Number(error.message.match(/line (\d+)/)[1]) : null });
        }
      } finally {
        save.disabled = false;
      }
    }

    const keys = (event) => {
      if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "s") { event.preventDefault(); write(); }
    };
    document.addEventListener("keydown", keys);
    load();
    return {
      nav: "list",
      dirty: () => dirty,
      escape: () => { if (!dirty) location.hash = memoryHref(id); else toast("Unsaved text: Save the file, or Cancel to drop it."); },
      leave: () => document.removeEventListener("keydown", keys),
    };
  }

  // ---------------------------------------------------------------- archive

  function archiveView() {
    const showing = viewGuard();
    const filter = h("input", { id: "archive-filter", type: "search", placeholder: "Filter the archive", "aria-label": "Filter the archive", autocomplete: "off" });
    const table = h("tbody", { id: "archive-rows" });
    const count = h("p", { class: "muted", id: "archive-count" });
    // An empty archive draws no table (nor a filter): only the sentence that it is empty.
    const grid = h("table", { class: "list", id: "archive-table", hidden: true },
      h("thead", {}, h("tr", {}, h("th", {}, "memory"), h("th", {}, "why"), h("th", {}, "archived"), h("th", {}, h("span", { class: "sr-only" }, "actions")))), table);
    setTitle("Archive");
    fill(main, h("h1", {}, "Archive"),
      h("p", { class: "muted" }, "Archived memories are kept in archive/ and never searched. Restore brings one back under its old id. No agent and no dream run can delete; you can, here, after confirming."),
      filter, count, grid);
    let rows = [];
    function render() {
      const q = filter.value.trim().toLowerCase();
      const shown = rows.filter((r) => !q || (r.id + " " + r.description + " " + (r.archiveReason || "")).toLowerCase().includes(q));
      count.textContent = rows.length ? shown.length + " of " + rows.length + " archived memories" : "The archive is empty.";
      grid.hidden = !shown.length;
      filter.hidden = !rows.length;
      // A confirmation the person has open outlives a redraw (a change on disk redraws the list):
      // the same box, under its memory's row again, while that memory is still shown.
      const open = document.getElementById("delete-confirm");
      const focused = open && open.contains(document.activeElement) ? document.activeElement : null;
      fill(table, ...shown.map((r) => h("tr", { dataset: { id: r.id } },
        h("td", {}, h("a", { href: memoryHref(r.id) }, r.description), h("div", { class: "mono small muted" }, r.id)),
        h("td", {}, r.archiveReason || "", r.supersededBy ? h("div", { class: "small muted" }, "superseded by ", h("a", { href: memoryHref(String(r.supersededBy)) }, String(r.supersededBy))) : null),
        h("td", { class: "small" }, when(r.archived)),
        h("td", { class: "row-actions" }, h("button", { class: "restore", onclick: () => restore(r.id) }, "Restore"), " ",
          h("button", { class: "danger delete", type: "button", onclick: (event) => confirmDelete(r, event.target.closest("tr")) }, "Delete…")))));
      const row = open ? Array.from(table.children).find((tr) => tr.dataset.id === open.dataset.memory) : null;
      if (row) {
        row.after(open);
        if (focused) focused.focus();
      }
    }
    // Deleting is a person's act, said plainly and confirmed: the only way to remove a memory.
    function confirmDelete(r, row) {
      const old = document.getElementById("delete-confirm");
      if (old) old.remove();
      const box = h("tr", { id: "delete-confirm", class: "confirm-row", dataset: { escape: "1", memory: r.id } }, h("td", { colspan: "4" },
        h("div", { class: "notice error confirm" },
          h("p", {}, "Delete ", h("span", { class: "mono" }, r.id), " for good? The file is removed from the folder; this page cannot bring it back (a copy in git or a backup can). Restore keeps it instead."),
          h("div", { class: "actions" },
            h("button", { type: "button", class: "danger solid", id: "delete-go", onclick: () => remove(r) }, "Delete for good"),
            h("button", { type: "button", id: "delete-cancel", onclick: () => box.remove() }, "Cancel")))));
      box.onescape = () => box.remove();
      row.after(box);
      box.querySelector("#delete-cancel").focus();
    }
    async function remove(r) {
      try {
        await api("/api/delete", { method: "POST", body: { id: r.id, expectedSha256: r.sha256 } });
        toast("Deleted " + r.id);
        load();
      } catch (error) { toast(error.message, { error: true }); load(); }
    }
    async function load() {
      try { rows = (await api("/api/archived")).results; } catch (error) { if (showing()) failure(error); return; }
      if (!showing()) return;
      render();
    }
    filter.addEventListener("input", render);
    load();
    return { nav: "archive", refresh: (kind) => { if (kind !== "runs") load(); } };
  }

  // ------------------------------------------------------------------ audit

  const AUDIT_POLL = 400;  // ms between two looks at a first audit under way

  function auditView() {
    const showing = viewGuard();
    const body = h("div", { id: "audit" }, h("p", { class: "muted" }, "Checking the folder…"));
    setTitle("Audit");
    fill(main, h("div", { class: "memory-head" }, h("h1", {}, "Audit"),
      h("button", { id: "audit-again", onclick: () => load(true) }, "Check again")),
    h("p", { class: "muted" }, "The audit reads every file and reports problems; it changes nothing."), body);
    // The last result at once (this launch's or the last one's), said to be checked again while
    // the run that reads what changed since is on its way; then that run's result.
    // A folder never audited before has no last result: the findings of the files read so
    // far are shown as they come (asked for again every little while) until the run ends.
    let shownFresh = false;
    let loads = 0;
    async function load(fresh) {
      shownFresh = false;
      const mine = ++loads;
      const known = () => api("/api/audit?known=1").then((found) => {
        if (!showing() || shownFresh || mine !== loads) return;
        if (found.running) show(found, false, found);
        else if (!found.pending) { show(found, found.stale); return; }
        setTimeout(known, AUDIT_POLL);
      }).catch(() => {});
      known();
      let data;
      try { data = await fetchAudit(fresh === true); } catch (error) { if (mine === loads) shownFresh = true; if (showing()) failure(error); return; }
      if (!showing() || mine !== loads) return;
      shownFresh = true;
      show(data, false);
    }

    function show(data, stale, running) {
      if (!running) {
        const badge = document.getElementById("audit-badge");
        badge.textContent = String(data.count);
        badge.hidden = !data.count;
      }
      const checking = running
        ? h("p", { class: "muted small", id: "audit-checking", role: "status" }, "Checking the folder for the first time: " + data.checked + " of about " + data.about + " files read so far; what they hold is below, the links and MEMORY.md are checked at the end…")
        : stale ? h("p", { class: "muted small", id: "audit-checking" }, "These are the last results; checking the folder again…") : null;
      if (!data.count && running) {
        fill(body, checking);
        return;
      }
      if (!data.count) {
        fill(body, checking, h("div", { class: "notice ok" }, "No problems found in " + data.checked + " files."));
        return;
      }
      fill(body, checking, h("p", {}, data.count + (data.count === 1 ? " finding" : " findings") + " in " + data.checked + " files checked."),
        h("table", { class: "list", id: "findings" },
          h("thead", {}, h("tr", {}, h("th", {}, "severity"), h("th", {}, "check"), h("th", {}, "file"), h("th", {}, "finding"))),
          h("tbody", {}, data.findings.map((f) => h("tr", {},
            h("td", { class: "sev-" + f.severity }, f.severity),
            h("td", { class: "mono small" }, f.check),
            h("td", { class: "mono small" }, f.id ? h("a", { href: memoryHref(f.id) }, f.path) : f.path, f.line ? ":" + f.line : ""),
            h("td", {}, f.message))))));
    }
    load();
    return { nav: "audit", refresh: (kind) => { if (kind !== "runs") load(); } };
  }

  // ------------------------------------------------------------- dream runs

  function runsView() {
    const showing = viewGuard();
    const table = h("div", { id: "runs" });
    const dreamBox = h("div", { class: "actions" },
      h("button", { id: "dream-report", onclick: () => dream("report") }, "Dream now: report only"),
      h("button", { id: "dream-rewrite", onclick: () => confirmRewrite() }, "Dream now: tidy the folder…"),
      h("a", { class: "button", href: "#/dream-settings", id: "dream-settings-link" }, "Settings…"));
    const confirmBox = h("div", { class: "notice warn confirm", hidden: true, id: "dream-confirm", dataset: { escape: "1" } });
    const agent = h("div", { id: "agent-status", class: "small muted" });
    setTitle("Dream runs");
    fill(main, h("h1", {}, "Dream runs"),
      h("p", { class: "muted" }, "Autodream tidies the folder: merges duplicates, archives what was superseded, adds summaries, makes dates absolute. Every rewrite run copies the folder first and can be rolled back."),
      agent, dreamBox, confirmBox, table);
    api("/api/dream/settings").then((data) => { if (showing()) fill(agent, commandLine(data)); }).catch(() => {});

    function confirmRewrite() {
      fill(confirmBox, 
        h("p", {}, "A rewrite run may change and archive memories (never delete). The whole folder is copied to a rollback point first, and you can undo the run from its page."),
        h("div", { class: "actions" }, h("button", { class: "primary", id: "dream-rewrite-go", onclick: () => { confirmBox.hidden = true; dream("rewrite"); } }, "Run it"),
          h("button", { onclick: () => { confirmBox.hidden = true; } }, "Cancel")));
      confirmBox.hidden = false;
    }

    // While a run started here runs (a minute or more at thousands of memories): how long it
    // has run and how many changes it has made so far, from its journal, a second after the
    // last answer (never two asks at once: at 50,000 memories they queued behind the run).
    function watchRun(mode) {
      const started = Date.now();
      const box = h("div", { class: "notice", id: "dream-progress", role: "status" }, "Dream run (" + mode + "): starting…");
      dreamBox.after(box);
      let run = null;
      let timer = null;
      let over = false;
      async function look() {
        let data;
        try { data = await api("/api/runs"); } catch (error) { data = null; }
        if (!over) timer = setTimeout(look, 1000);
        if (!data || !box.isConnected) return;
        const found = data.runs.find((r) => r.kind === "dream" && r.status === "running");
        if (found) run = found;
        if (run) {
          const n = (run.counts.applied || 0) + (run.counts.proposed || 0) + (run.counts.pending || 0);
          box.textContent = "Dream run " + run.runId + " (" + mode + "): running for " + Math.round((Date.now() - started) / 1000) + " s; " +
            n + (n === 1 ? " change" : " changes") + " so far";
        }
        if (showing()) render(data);
      }
      timer = setTimeout(look, 250);
      return () => { over = true; clearTimeout(timer); box.remove(); };
    }

    async function dream(mode, rulesOnly) {
      dreamBox.querySelectorAll("button").forEach((b) => { b.disabled = true; });
      const done = watchRun(mode);
      try {
        const result = await api("/api/dream", { method: "POST", body: { mode: mode, rulesOnly: rulesOnly === true } });
        toast("Dream " + result.runId + ": " + result.changes + (mode === "rewrite" ? " changes" : " proposed changes"));
        location.hash = "#/runs/" + enc(result.runId);
      } catch (error) {
        if (/^not started: /.test(error.message)) {
          // The agent command cannot be started: said before any run, with the ways on.
          fill(confirmBox, h("p", { id: "dream-refused" }, error.message.replace(/^not started: /, "Not started: ") + "."),
            h("div", { class: "actions" },
              h("button", { type: "button", id: "dream-rules-only", onclick: () => { confirmBox.hidden = true; dream(mode, true); } }, "Run with the rules only"),
              h("a", { class: "button", href: "#/dream-settings" }, "Change the command"),
              h("button", { type: "button", onclick: () => { confirmBox.hidden = true; } }, "Cancel")));
          confirmBox.hidden = false;
        } else toast(error.message, { error: true });
      } finally {
        done();
        dreamBox.querySelectorAll("button").forEach((b) => { b.disabled = false; });
      }
    }

    async function load() {
      let data;
      try { data = await api("/api/runs"); } catch (error) { if (showing()) failure(error); return; }
      if (showing()) render(data);
    }

    function render(data) {
      if (!data.runs.length) {
        fill(table, h("p", { class: "empty" }, "No dream runs yet."));
        return;
      }
      fill(table, h("table", { class: "list" },
        h("thead", {}, h("tr", {}, ["run", "what", "status", "started", "changes"].map((t) => h("th", {}, t)), h("th", {}, h("span", { class: "sr-only" }, "undone by")))),
        h("tbody", {}, data.runs.map((r) => {
          const changed = r.kind === "rollback" ? (r.counts.applied || 0) + " files" :
            (r.mode === "rewrite" ? (r.counts.applied || 0) + " changes" : (r.counts.proposed || 0) + " proposed");
          return h("tr", { dataset: { run: r.runId } },
            h("td", { class: "mono small" }, h("a", { href: "#/runs/" + enc(r.runId) }, r.runId)),
            h("td", {}, r.kind === "rollback" ? "rollback of " : "dream ", r.kind === "rollback" ? h("a", { href: "#/runs/" + enc(r.target || "") }, r.target) : r.mode,
              r.kind === "rollback" && r.scope ? " (" + r.scope + ")" : ""),
            h("td", {}, h("span", { class: "status " + r.status }, r.status)),
            h("td", { class: "small" }, when(r.started)),
            h("td", { class: "small" }, changed, r.counts.refused ? ", " + r.counts.refused + " refused" : "", r.counts.notes ? ", " + r.counts.notes + " notes" : ""),
            h("td", { class: "small" }, r.rolledBackBy ? ["undone by ", h("a", { href: "#/runs/" + enc(r.rolledBackBy) }, r.rolledBackBy)] : ""));
        }))));
    }
    load();
    return { nav: "runs", refresh: () => load() };
  }

  // The agent command a run would start, and whether it can be.
  function commandLine(data) {
    const c = data.command;
    if (!c.configured) return h("span", { id: "agent-command" }, "Model pass: none configured (the rules run alone). ", h("a", { href: "#/dream-settings" }, "Set an agent command"));
    return h("span", { id: "agent-command", class: c.problem ? "sev-error" : "" }, "Agent command in effect: ",
      h("code", {}, c.argv.join(" ")), c.found ? " (" + c.found + ")" : "", c.problem ? [" — ", c.problem] : null);
  }

  // The dream's settings: one field per setting of DreamConfig, written to config.json.
  function dreamSettingsView() {
    const showing = viewGuard();
    setTitle("Dream settings");
    const form = h("form", { class: "editor", id: "dream-settings", novalidate: true });
    const status = h("div", { id: "settings-status" });
    fill(main, h("div", { class: "memory-head" }, h("h1", {}, "Dream settings"), h("a", { class: "button", href: "#/runs" }, "Dream runs")),
      h("p", { class: "muted" }, "How autodream runs: when it may start on its own, the model or agent it may call, and how many rollback points it keeps. Saved to config.json in the state folder (never in the memory folder); a flag on the command line still wins."),
      status, form);
    let shown = null;
    let dirty = false;

    // Each setting: its control, its help (code in `backticks` shown as code) and its default.
    function control(f, agents) {
      const id = "s-" + f.key;
      const value = f.value;
      const help = h("small", { class: "muted help", id: id + "-help" }, helpText(f.help), f.help ? " " : "", "Default: " + shownDefault(f) + ".");
      if (f.kind === "bool") {
        return h("div", { class: "setting field" },
          h("label", { class: "check" }, h("input", { type: "checkbox", id: id, name: f.key, checked: value === true, "aria-describedby": id + "-help" }), f.label,
            h("span", { class: "mono small muted" }, " " + f.key)), help);
      }
      let input;
      let chooser = null;
      if (f.kind === "choice") {
        input = h("select", { id: id, name: f.key }, f.choices.map((c) => h("option", { value: String(c) }, String(c))));
        input.value = String(value);
      } else if (f.kind === "command") {
        input = h("input", { id: id, name: f.key, value: (value || []).map(quoteArg).join(" "), placeholder: "claude -p {prompt} --mcp-config {mcp_config}", autocomplete: "off", spellcheck: "false", class: "mono" });
        chooser = agentChooser(input, agents || []);
      } else if (f.kind === "int" || f.kind === "number") {
        input = h("input", { id: id, name: f.key, type: "number", step: f.kind === "int" ? "1" : "any", min: f.minimum === null || f.minimum === undefined ? null : String(f.minimum), value: String(value) });
      } else {
        input = h("input", { id: id, name: f.key, value: value === null || value === undefined ? "" : String(value) });
      }
      input.setAttribute("aria-describedby", id + "-help");
      return h("div", { class: "setting field" }, h("label", { for: id }, f.label, h("span", { class: "mono small muted" }, " " + f.key)),
        chooser, input, help);
    }

    // The agent CLIs found on PATH, as choices that fill in the command (still free to edit).
    function agentChooser(input, agents) {
      if (!agents.length) return null;
      const command = (a) => a.argv.map(quoteArg).join(" ");
      const select = h("select", { id: "s-agentCommand-agent", "aria-label": "An agent found on this machine" },
        h("option", { value: "" }, "Choose an agent found on this machine…"),
        agents.map((a) => h("option", { value: a.name }, a.name + " (" + a.found + ")")));
      const same = () => { const found = agents.find((a) => command(a) === input.value.trim()); select.value = found ? found.name : ""; };
      same();
      select.addEventListener("change", () => {
        const chosen = agents.find((a) => a.name === select.value);
        if (!chosen) return;
        input.value = command(chosen);
        input.dispatchEvent(new Event("input", { bubbles: true }));
      });
      input.addEventListener("input", same);
      return select;
    }

    function shownDefault(f) {
      if (f.kind === "bool") return f.default ? "on" : "off";
      if (f.kind === "command") return f.default && f.default.length ? f.default.join(" ") : "none";
      if (f.default === "" || f.default === null || f.default === undefined) return "empty";
      return String(f.default);
    }

    function read(f) {
      const node = form.elements.namedItem(f.key);
      if (f.kind === "bool") return node.checked;
      if (f.kind === "int" || f.kind === "number") return node.value.trim() === "" ? f.default : Number(node.value);
      if (f.kind === "command") return splitArgs(node.value);
      if (f.kind === "choice") { const found = f.choices.find((c) => String(c) === node.value); return found === undefined ? node.value : found; }
      return node.value;
    }

    function render(data) {
      shown = data;
      dirty = false;
      fill(status,
        data.problem ? h("div", { class: "notice error", id: "settings-problem" }, data.problem) : null,
        h("p", { class: "small" }, commandLine(data)),
        h("p", { class: "muted small" }, "File: ", h("span", { class: "mono", title: data.file }, data.fileShown), data.exists ? "" : " (not there yet: every setting is its default)"));
      // Session transcripts may hold private text: said where the choice is made.
      const privacy = h("div", { class: "notice warn", id: "privacy-warning", hidden: true },
        h("strong", {}, "Privacy: "), "with session transcripts, the model pass can search what you and your agent wrote in past sessions " +
        "(by keyword, a few lines at a time, secrets masked). They may hold private text; nothing leaves your machine unless the agent command sends it.");
      const source = data.fields.find((f) => f.key === "inputSource");
      fill(form, h("div", { class: "grid2" }, data.fields.map((f) => control(f, data.agents))), privacy,
        h("div", { class: "actions" }, h("button", { class: "primary", type: "submit", id: "settings-save" }, "Save settings"),
          h("button", { type: "button", onclick: () => load() }, "Undo my changes")));
      if (source) {
        const select = form.elements.namedItem("inputSource");
        const show = () => { privacy.hidden = select.value === String(source.default); };
        select.addEventListener("change", show);
        show();
      }
    }

    async function load() {
      let data;
      try { data = await api("/api/dream/settings"); } catch (error) { if (showing()) failure(error); return; }
      if (showing()) render(data);
    }

    form.addEventListener("input", () => { dirty = true; });
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (!shown) return;
      const values = {};
      for (const f of shown.fields) {
        const v = read(f);
        if (JSON.stringify(v) !== JSON.stringify(f.value)) values[f.key] = v;
      }
      if (!Object.keys(values).length) { toast("Nothing changed."); return; }
      try {
        const data = await api("/api/dream/settings", { method: "POST", body: { values: values, expectedSha256: shown.sha256 } });
        toast("Saved the dream settings");
        render(data);
      } catch (error) {
        toast(error.message, { error: true });
        if (error.status === 409) load();
      }
    });
    load();
    return { nav: "runs", dirty: () => dirty };
  }

  // A help text as the page shows it: what is in `backticks` is code, shown as code.
  function helpText(text) {
    return String(text || "").split(/`([^`]*)`/).map((part, i) => (i % 2 ? h("code", {}, part) : part));
  }

  // A command line as words: spaces split, "double" or 'single' quotes keep a word whole.
  function splitArgs(text) {
    const out = [];
    const pattern = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
    let m;
    while ((m = pattern.exec(text)) !== null) out.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, "$1") : m[2] !== undefined ? m[2] : m[3]);
    return out;
  }

  function quoteArg(word) {
    return /^[^\s"'\\]+$/.test(word) ? word : '"' + word.replace(/["\\]/g, "\\$&") + '"';
  }

  // What a rollback moves, said as it is: into archive/ (a memory the run created), or set
  // aside in the rollback's own folder in the state folder (a MEMORY.md the run created, an
  // archived copy of a memory that is live again), or back into archive/.
  function moves(actions, done) {
    const count = (kind) => (actions || []).filter((a) => a.action === kind).length;
    const parts = [];
    const archived = count("archive");
    const aside = (actions || []).filter((a) => a.action === "set-aside").map((a) => a.path);
    const back = count("return");
    if (archived) parts.push((done ? "" : "move ") + archived + (done ? " moved" : "") + " to archive/");
    if (aside.length) parts.push((done ? "" : "set ") + (aside.length <= 3 ? aside.join(" and ") : aside.length + " files") + (done ? " set" : "") + " aside in the rollback's folder");
    if (back) parts.push((done ? "" : "return ") + back + (done ? " returned" : "") + " to archive/");
    return parts.join(", ");
  }

  // A change that moved a file out of the memory folder, into the rollback's own folder.
  function setAside(change) {
    const to = change.after && change.after.file;
    return change.operation === "archive" && typeof to === "string" && !to.startsWith("archive/");
  }

  function runView(runId) {
    const showing = viewGuard();
    let lastStatus = null;
    let kind = "";  // the kind of change shown (a rule of the report), "" for all
    setTitle("Run " + runId);
    const runUrl = (offset) => "/api/runs/" + enc(runId) + "?offset=" + offset + (kind ? "&kind=" + enc(kind) : "");
    async function load(force) {
      let data;
      try { data = await api(runUrl(0)); } catch (error) { if (showing()) failure(error); return; }
      if (!showing()) return;
      const key = JSON.stringify([data.run.status, data.run.counts, data.run.rolledBackBy, kind]);
      if (key === lastStatus && force !== true) return;
      lastStatus = key;
      render(data);
    }

    // One change: what was done, to which file, by which rule and why, with its diff.
    function changeItem(c) {
      return h("details", { class: "change", dataset: { file: c.file || "", kind: c.kind || "" } },
        h("summary", {},
          h("span", { class: "op " + c.operation }, setAside(c) ? "set aside" : c.operation),
          h("span", { class: "mono" }, c.file),
          c.after && c.after.file && c.after.file !== c.file ? h("span", { class: "mono muted" }, setAside(c) ? "→ the rollback's folder (state folder)" : "→ " + c.after.file) : null,
          h("span", { class: "muted small" }, c.rule || ""),
          h("span", {}, c.unexplained ? "unexplained (no reason given)" : c.reason),
          c.state === "pending" ? h("span", { class: "status interrupted" }, "may not have happened") : null),
        c.fields && c.fields.length ? h("p", { class: "small muted" }, "fields: " + c.fields.join(", ")) : null,
        c.diff ? (c.diff.length ? diffBlock(c.diff) : h("p", { class: "muted small" }, "(no difference in the text)")) : h("p", { class: "muted small" }, c.diffNote || ""));
    }

    // The changes a page at a time, of the kind chosen: a run of thousands draws one page.
    function changesPanel(data) {
      const list = h("div", { id: "run-changes" }, data.run.changes.map(changeItem));
      const count = h("p", { class: "muted small", id: "changes-count", "aria-live": "polite" });
      const more = h("div", { class: "more" });
      let shown = data.run.changes.length;
      const total = data.changesTotal;
      const showCount = () => {
        count.textContent = "Showing " + shown + " of " + total + (kind ? " (of " + data.changesAll + " in all)" : "");
        fill(more, shown < total ? h("button", { type: "button", id: "changes-more", onclick: () => next() },
          "Show " + Math.min(50, total - shown) + " more (" + (total - shown) + " not shown)") : null);
      };
      let fetching = false;
      async function next() {
        if (fetching) return;
        fetching = true;
        let page;
        try { page = await api(runUrl(shown)); } catch (error) { toast(error.message, { error: true }); return; } finally { fetching = false; }
        if (!showing()) return;
        list.append(...page.run.changes.map(changeItem));
        shown += page.run.changes.length;
        showCount();
      }
      const select = h("select", { id: "change-kind", "aria-label": "Kind of change" },
        h("option", { value: "" }, "Every kind (" + data.changesAll + ")"),
        data.kinds.map((k) => h("option", { value: k.kind }, k.title + " (" + k.count + ")")));
      select.value = kind;
      select.addEventListener("change", () => { kind = select.value; load(true); });
      showCount();
      return [h("div", { class: "changes-head" }, h("h2", {}, "Changes (" + data.changesAll + ")"), data.kinds.length > 1 || kind ? select : null),
        total ? [count, list, more] : h("p", { class: "muted" }, kind ? "No change of this kind." : "No changes.")];
    }

    function render(data) {
      const run = data.run;
      const rollbackKind = run.kind === "rollback";
      const counts = run.counts || {};
      const panel = h("div", { class: "panel", id: "rollback-panel" });
      if (data.rollback.possible) {
        const scopeTouched = h("input", { type: "radio", name: "scope", value: "touched", id: "scope-touched", checked: true });
        const scopeAll = h("input", { type: "radio", name: "scope", value: "all", id: "scope-all" });
        const confirmBox = h("div", { class: "confirm", id: "rollback-confirm-box", hidden: true, dataset: { escape: "1" } });
        // The settings' rollbackScope chooses the scope offered first.
        api("/api/dream/settings").then((settings) => {
          const field = (settings.fields || []).find((f) => f.key === "rollbackScope");
          if (field && field.value === "all") scopeAll.checked = true;
        }).catch(() => {});
        panel.append(h("h2", {}, rollbackKind ? "Undo this rollback" : "Undo this run"),
          h("label", { class: "check" }, scopeTouched, "Only the files this run changed (touched)"),
          h("label", { class: "check" }, scopeAll, "The whole folder, back to how it was before this run (all)"),
          h("div", { class: "actions" }, h("button", { class: "danger", id: "rollback", onclick: () => preview(false) }, "Roll back…")),
          confirmBox);

        async function preview(force) {
          const scope = scopeAll.checked ? "all" : "touched";
          force = force === true;
          let plan;
          try { plan = await api("/api/runs/" + enc(runId) + "/rollback", { method: "POST", body: { scope: scope, dryRun: true, force: force } }); } catch (error) { toast(error.message, { error: true }); return; }
          const restoreCount = plan.restored;
          const names = plan.conflicts - plan.forcible;
          // Files changed since the run are listed first (the plan puts them first) and are
          // put back only when the person ticks the box: the preview is then redone with force.
          const forceBox = h("input", { type: "checkbox", id: "rollback-force", checked: force, onchange: () => preview(forceBox.checked) });
          fill(confirmBox,
            h("p", { id: "rollback-summary" }, "This will put back " + restoreCount + " file" + (restoreCount === 1 ? "" : "s") +
              " as they were before " + runId + (moves(plan.actions) ? ", " + moves(plan.actions) : "") + " (nothing is deleted), and skip " +
              plan.forcible + " changed since the run and " + names + " name conflict" + (names === 1 ? "" : "s") + " (nothing is overwritten). " +
              "First the folder as it is now is copied, so this rollback can itself be undone."),
            plan.forcible || force ? h("label", { class: "check", id: "rollback-force-label" }, forceBox,
              "Also put back the files changed since the run (the version there now is kept in the protective snapshot)") : null,
            plan.actions.length ? h("ul", { id: "rollback-plan" }, plan.actions.map((a) => h("li", { dataset: { action: a.action, path: a.path } },
              h("strong", {}, a.action), " ", h("span", { class: "mono" }, a.path), a.detail ? " (" + a.detail + ")" : ""))) :
              h("p", { class: "muted" }, "Nothing differs from the rollback point: the rollback would change no file."),
            h("div", { class: "actions" },
              h("button", { class: "danger solid", id: "rollback-confirm", onclick: () => go(scope, force) }, "Roll back now (" + scope + (force ? ", forced" : "") + ")"),
              h("button", { onclick: () => { confirmBox.hidden = true; } }, "Cancel")));
          confirmBox.hidden = false;
        }

        async function go(scope, force) {
          document.getElementById("rollback-confirm").disabled = true;
          try {
            const result = await api("/api/runs/" + enc(runId) + "/rollback", { method: "POST", body: { scope: scope, dryRun: false, force: force } });
            const moved = moves(result.actions, true);
            toast("Rolled back " + runId + " as " + result.rollbackId + ": " + result.restored + " put back" + (moved ? ", " + moved : "") +
              (result.conflicts ? ", " + result.conflicts + " skipped" : ""));
            location.hash = "#/runs/" + enc(result.rollbackId);
          } catch (error) { toast(error.message, { error: true }); }
        }
      } else {
        add(panel, [h("p", { class: "muted", id: "no-rollback" }, "No rollback: " + data.rollback.why + "."),
          run.rolledBackBy ? h("p", {}, "Rolled back by ", h("a", { href: "#/runs/" + enc(run.rolledBackBy) }, run.rolledBackBy)) : null]);
      }

      const report = h("div", { class: "markdown", id: "run-report" });
      if (data.report) report.append(window.SageMarkdown.render(data.report, {}));
      else report.append(h("p", { class: "muted" }, "No report file (", h("span", { class: "mono" }, data.reportPath), ")."));

      fill(main, 
        h("div", { class: "memory-head" },
          h("div", {}, h("h1", { id: "run-title" }, rollbackKind ? "Rollback " : "Dream run ", h("span", { class: "mono" }, run.runId)),
            h("div", { class: "muted small" },
              rollbackKind ? ["of ", h("a", { href: "#/runs/" + enc(run.target || "") }, run.target), " (" + run.scope + ")"] : run.mode + " mode",
              " · ", h("span", { class: "status " + run.status, id: "run-status" }, run.status),
              " · started " + when(run.started), run.finished ? " · finished " + when(run.finished) : "",
              " · " + (counts.applied || 0) + " applied, " + (counts.proposed || 0) + " proposed, " + (counts.refused || 0) + " refused")),
          h("a", { class: "button", href: "#/runs" }, "All runs")),
        run.error ? h("div", { class: "notice error" }, "The run stopped early: " + run.error) : null,
        panel,
        changesPanel(data),
        h("h2", {}, "Report"),
        h("div", { class: "panel" }, report));
    }
    load();
    return { nav: "runs", refresh: () => load() };
  }

  // --------------------------------------------------------------- star map

  function starsView() {
    const showing = viewGuard();
    setTitle("Star map");
    // One Tab stop: the arrow keys go from star to star, each said in #star-focus; the same
    // stars are in #star-list as links, for a screen reader or anyone who prefers a list.
    const canvas = h("canvas", { id: "starmap", tabindex: "0", role: "application", "aria-roledescription": "star map",
      "aria-label": "Star map: every memory a star. Arrow keys: the nearest star that way; N and P: the next and previous; Enter opens it.",
      "aria-describedby": "star-focus" });
    const focusLine = h("p", { id: "star-focus", class: "star-focus small", "aria-live": "polite" });
    const list = h("div", { id: "star-list-body" });
    const listBox = h("details", { id: "star-list", class: "star-list" }, h("summary", {}, "The stars as a list"), list);
    const tip = h("div", { class: "star-tip", hidden: true, id: "star-tip" });
    const legend = h("div", { class: "star-legend", id: "star-legend" });
    const slider = h("input", { type: "range", id: "timeline", min: "0", max: "1000", value: "1000",
      "aria-label": "Timeline (arrow keys: one day with a new memory at a time)" });
    const label = h("span", { class: "when", id: "timeline-label" });
    const play = h("button", { id: "replay", type: "button" }, "▶ Birth replay");
    fill(main,
      h("div", { class: "memory-head" }, h("div", {}, h("h1", {}, "Star map"),
        h("p", { class: "muted starmap-intro" }, "Every memory is a star: colour is its category, size its length, brightness how recently it was updated. " +
          "Lines are real relations: a link from one memory to another, and dashed gold where one supersedes another; linked memories sit near each other. " +
          "Hover for its description and its relations, click to open it; the wheel or + and − zoom, a drag pans."))),
      h("div", { class: "starmap-wrap" }, canvas, legend, tip),
      h("div", { class: "timeline" }, play, slider, label,
        h("span", { class: "zoom", role: "group", "aria-label": "Zoom" },
          h("button", { type: "button", id: "zoom-in", "aria-label": "Zoom in", title: "Zoom in (+, or the wheel)", onclick: () => map.zoomBy(1.5) }, "+"),
          h("button", { type: "button", id: "zoom-out", "aria-label": "Zoom out", title: "Zoom out (−)", onclick: () => map.zoomBy(1 / 1.5) }, "−"),
          h("button", { type: "button", id: "zoom-reset", title: "The whole sky (0)", onclick: () => map.resetView() }, "Whole sky"))),
      focusLine, listBox);

    const map = new window.SageStarmap(canvas, tip, {
      onOpen: (id) => { location.hash = memoryHref(id); },
      onFocus: (star, words) => { focusLine.textContent = words; },
      onTime: (fraction) => { slider.value = String(Math.round(fraction * 1000)); showLabel(); if (!map.playing) play.textContent = "▶ Birth replay"; },
      onDraw: () => { showLabel(); showLegend(); },
    });

    function showLabel() {
      const shown = canvas.dataset.starCount;
      const total = canvas.dataset.total;
      const at = map.time === Infinity ? "now" : when(new Date(map.time).toISOString()).slice(0, 10);
      label.textContent = at + ": " + shown + " of " + total + " stars, " + canvas.dataset.edges + " lines";
    }

    // The legend counts the stars in the sky now (it follows the timeline and the replay).
    let legendKey = "";
    function showLegend() {
      const shown = map.shown || {};
      const groups = Object.keys(window.SageStarmap.COLORS).filter((g) => shown[g]);
      const key = groups.map((g) => g + shown[g]).join(",");
      if (key === legendKey) return;
      legendKey = key;
      fill(legend, groups.map((g) => {
        const dot = h("span", { class: "dot" });
        dot.style.background = "rgb(" + window.SageStarmap.COLORS[g].join(",") + ")";
        return h("span", { dataset: { group: g } }, dot, (g === "other" ? "uncategorized" : g) + " " + shown[g]);
      }));
    }

    slider.addEventListener("input", () => { map.pause(); play.textContent = "▶ Birth replay"; map.setFraction(Number(slider.value) / 1000); });
    slider.addEventListener("keydown", (event) => {
      const step = { ArrowRight: 1, ArrowUp: 1, ArrowLeft: -1, ArrowDown: -1 }[event.key];
      if (!step) return;
      event.preventDefault();
      map.pause();
      play.textContent = "▶ Birth replay";
      map.step(step);
      slider.value = String(Math.round(map.fraction * 1000));
    });
    play.addEventListener("click", () => {
      if (map.playing) { map.pause(); play.textContent = "▶ Birth replay"; }
      else { map.play(); play.textContent = "❚❚ Pause"; }
    });

    // Every star as a link with its relations, by category: drawn when opened (and again when
    // the data changes while it is open), so that a big map costs nothing until it is asked for.
    function renderList() {
      if (!listBox.open) return;
      const groups = Object.keys(window.SageStarmap.COLORS);
      const names = (stars) => stars.slice(0, 8).map((s) => s.id).join(", ") + (stars.length > 8 ? " and " + (stars.length - 8) + " more" : "");
      fill(list, groups.map((g) => {
        const stars = map.order.filter((s) => s.group === g);
        if (!stars.length) return null;
        return h("section", { dataset: { group: g } },
          h("h2", {}, (g === "other" ? "uncategorized" : g) + " (" + stars.length + ")"),
          h("ul", {}, stars.map((s) => h("li", { dataset: { id: s.id } },
            h("a", { href: memoryHref(s.id) }, s.description || s.id), " ", h("span", { class: "mono small muted" }, s.id),
            s.linksTo.length ? h("div", { class: "small" }, "links to " + names(s.linksTo)) : null,
            s.linkedFrom.length ? h("div", { class: "small" }, "linked from " + names(s.linkedFrom)) : null,
            s.supersedes.length ? h("div", { class: "small" }, "supersedes " + names(s.supersedes)) : null,
            s.supersededBy.length ? h("div", { class: "small" }, "superseded by " + names(s.supersededBy)) : null))));
      }));
    }
    listBox.addEventListener("toggle", renderList);

    async function load() {
      let data;
      try { data = await api("/api/stars"); } catch (error) { if (showing()) failure(error); return; }
      if (!showing()) return;
      map.setStars(data);
      if (map.fraction === undefined) map.setFraction(1);
      renderList();
    }
    load();
    return { nav: "stars", refresh: (kind) => { if (kind !== "runs") load(); }, leave: () => map.destroy() };
  }

  // ------------------------------------------------------------------ start

  route();
  connectLive();
  if (token()) { refreshBadge(); refreshFooter(); }
})();
