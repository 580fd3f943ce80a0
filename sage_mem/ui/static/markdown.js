/* A small markdown renderer that builds DOM nodes, never HTML strings.
 *
 * Memory bodies and dream reports are shown formatted, but every character of
 * them reaches the page as a text node: `<script>` in a memory is shown as the
 * text "<script>". Covers what memories and reports use: headings, paragraphs,
 * lists, block quotes, fenced code, pipe tables, rules, `code`, **bold**,
 * *italic*, [links](x.md), [[wiki links]]. A link becomes a memory link (#/m/id)
 * or an http(s) link; anything else (javascript:, data:) stays text.
 */
"use strict";

(function () {
  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text != null) node.textContent = text;
    return node;
  }

  // Resolve a relative .md link against the folder of the memory it is in.
  function resolveId(target, base) {
    let path = target.replace(/\.md$/i, "").split("#")[0];
    try { path = decodeURIComponent(path); } catch (e) { /* keep it as written */ }
    const parts = path.startsWith("/") ? [] : (base || "").split("/").slice(0, -1);
    for (const part of path.split("/")) {
      if (part === "" || part === ".") continue;
      if (part === "..") parts.pop(); else parts.push(part);
    }
    return parts.join("/");
  }

  // A memory link goes where options.resolve(kind, written) says (the server's resolution):
  // to the live memory, or styled as broken (with the archived copy when there is one).
  function mark(a, kind, written, guess, options) {
    const found = options.resolve ? options.resolve(kind, written) : undefined;
    let id = guess;
    if (found) {
      if (found.id) id = found.id;
      else {
        a.className = "missing";
        a.title = found.archived ? "archived: now " + found.archived : "no memory with that id";
        if (found.archived) id = found.archived;
      }
    } else if (found === null) {
      a.className = "missing";
      a.title = "no memory with that id";
    }
    a.href = "#/m/" + encodeURIComponent(id);
  }

  function link(text, href, options) {
    const a = el("a", null, text);
    if (/^https?:\/\//i.test(href)) {
      a.href = href;
      a.target = "_blank";
      a.rel = "noopener noreferrer";
      return a;
    }
    if (/^[a-z][a-z0-9+.-]*:/i.test(href) || !/\.md(#.*)?$/i.test(href)) return null;
    mark(a, "markdown", href, resolveId(href, options.base), options);
    return a;
  }

  // Inline spans: code first (nothing inside it is formatted), then links, bold, italic.
  // Groups: 1-2 code, 3-4 wiki link, 5-6 link, 7 **bold**, 8-9 __bold__, 10 *italic*, 11-12 _italic_
  // (underscores count only at word edges, so snake_case and __dunder__ names stay as they are).
  // Each span's length is bounded and a link's parts hold no bracket, so that a long line of
  // `[[` or `[x](` costs linear time, not quadratic.
  const INLINE = /(`+)([\s\S]{0,5000}?[^`])\1(?!`)|\[\[([^[\]\n|]{1,300})(?:\|([^[\]\n]{1,300}))?\]\]|\[([^[\]\n]{1,1000})\]\(([^()\s]{1,2000})\)|\*\*([^*\n]+)\*\*|(^|[\s(])__([^_\s][^_\n]*)__(?![\w])|\*([^*\s][^*\n]*)\*|(^|[\s(])_([^_\s][^_\n]*)_(?!\w)/g;

  function inline(text, parent, options) {
    // A regex of its own per call: bold and italic recurse into this function.
    const pattern = new RegExp(INLINE.source, "g");
    let last = 0;
    let m;
    while ((m = pattern.exec(text)) !== null) {
      let start = m.index;
      if (m[8] !== undefined) start += m[8].length;
      if (m[11] !== undefined) start += m[11].length;
      if (start > last) parent.append(text.slice(last, start));
      if (m[1] !== undefined) {
        parent.append(el("code", null, m[2].replace(/^ (.*) $/, "$1")));
      } else if (m[3] !== undefined) {
        const a = el("a", null, (m[4] || m[3]).trim());
        const target = m[3].split("#")[0];
        mark(a, "wiki", target, target.trim().replace(/\.md$/i, ""), options);
        parent.append(a);
      } else if (m[5] !== undefined) {
        const a = link(m[5], m[6], options);
        parent.append(a || m[0]);
      } else if (m[7] !== undefined || m[9] !== undefined) {
        const strong = el("strong");
        inline(m[7] !== undefined ? m[7] : m[9], strong, options);
        parent.append(strong);
      } else {
        const em = el("em");
        inline(m[10] !== undefined ? m[10] : m[12], em, options);
        parent.append(em);
      }
      last = pattern.lastIndex;
    }
    if (last < text.length) parent.append(text.slice(last));
  }

  function cells(line) {
    return line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
  }

  const MAX_QUOTE = 16;  // deeper block quotes show as text (thousands of `>` would overflow)

  function render(source, options, depth) {
    depth = depth || 0;
    options = options || {};
    const root = document.createDocumentFragment();
    const lines = String(source || "").replace(/\r\n?/g, "\n").split("\n");
    let i = 0;
    let paragraph = [];
    const flush = () => {
      if (!paragraph.length) return;
      const p = el("p");
      paragraph.forEach((line, n) => {
        if (n) p.append(el("br"));
        inline(line, p, options);
      });
      root.append(p);
      paragraph = [];
    };
    while (i < lines.length) {
      const line = lines[i];
      let m;
      if (/^\s*$/.test(line)) { flush(); i++; continue; }
      if ((m = line.match(/^\s*(`{3,}|~{3,})\s*([\w+-]*)/))) {
        flush();
        const fence = m[1];
        const code = [];
        i++;
        while (i < lines.length && !lines[i].trim().startsWith(fence)) code.push(lines[i++]);
        i++;
        const pre = el("pre");
        pre.append(el("code", m[2] ? "lang-" + m[2] : null, code.join("\n")));
        root.append(pre);
        continue;
      }
      if ((m = line.match(/^(#{1,6})\s+(.*?)\s*#*\s*$/))) {
        flush();
        const heading = el("h" + m[1].length);
        inline(m[2], heading, options);
        root.append(heading);
        i++;
        continue;
      }
      if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) { flush(); root.append(el("hr")); i++; continue; }
      if (/^\s*>/.test(line)) {
        flush();
        const quoted = [];
        while (i < lines.length && /^\s*>/.test(lines[i])) quoted.push(lines[i++].replace(/^\s*>\s?/, ""));
        const block = el("blockquote");
        block.append(depth < MAX_QUOTE ? render(quoted.join("\n"), options, depth + 1) : el("p", null, quoted.join("\n")));
        root.append(block);
        continue;
      }
      if (/^\s*\|.*\|\s*$/.test(line) && i + 1 < lines.length && /^\s*\|?\s*:?-{2,}/.test(lines[i + 1])) {
        flush();
        const table = el("table");
        const head = el("tr");
        // A header cell with no text heads nothing (a screen reader would read it as a blank).
        cells(line).forEach((c) => { const th = el(c.trim() ? "th" : "td"); inline(c, th, options); head.append(th); });
        const thead = el("thead"); thead.append(head); table.append(thead);
        const body = el("tbody");
        i += 2;
        while (i < lines.length && /^\s*\|.*\|\s*$/.test(lines[i])) {
          const row = el("tr");
          cells(lines[i++]).forEach((c) => { const td = el("td"); inline(c, td, options); row.append(td); });
          body.append(row);
        }
        table.append(body);
        root.append(table);
        continue;
      }
      if ((m = line.match(/^(\s*)([-*+]|\d+[.)])\s+/))) {
        flush();
        const ordered = /\d/.test(m[2]);
        const list = el(ordered ? "ol" : "ul");
        while (i < lines.length) {
          const item = lines[i].match(/^(\s*)([-*+]|\d+[.)])\s+(.*)$/);
          if (!item) {
            // A continuation line (indented) belongs to the item before it.
            if (/^\s{2,}\S/.test(lines[i]) && list.lastChild) {
              list.lastChild.append(" ");
              inline(lines[i].trim(), list.lastChild, options);
              i++;
              continue;
            }
            break;
          }
          const li = el("li");
          const task = item[3].match(/^\[([ xX])\]\s+(.*)$/);
          if (task) {
            li.append(task[1] === " " ? "☐ " : "☑ ");
            inline(task[2], li, options);
          } else {
            inline(item[3], li, options);
          }
          if (item[1].length >= 2 && list.lastChild) li.style.marginLeft = Math.min(item[1].length, 12) * 0.6 + "em";
          list.append(li);
          i++;
        }
        root.append(list);
        continue;
      }
      paragraph.push(line);
      i++;
    }
    flush();
    return root;
  }

  window.SageMarkdown = { render: render, resolveId: resolveId };
})();
