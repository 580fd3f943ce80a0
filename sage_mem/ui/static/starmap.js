/* The star map: every memory a star on a <canvas>.
 *
 * Colour by category, size by length, brightness by how recently the memory
 * was updated; each category is a small galaxy. A star's place comes from a
 * hash of its id, then linked memories are drawn toward each other (`settle`),
 * so that what links together sits together. The wheel, a drag and the + - 0
 * keys zoom and pan; a hovered (or keyboard-focused) star lights its relations
 * and rings the stars they reach. The lines are the real relations:
 * a `[[link]]` or markdown link (faint, the colour of the linking memory) and
 * `supersedes` (dashed, gold). The canvas is drawn only when something changes
 * (data, size, hover, the timeline): there is no animation loop, except while
 * the birth replay plays. The sky is drawn once into a layer of its own, so a
 * hover repaints one image and a ring; each star is a pre-rendered sprite, so
 * thousands draw within a frame. A sky of thousands is laid out on typed arrays
 * and makes little garbage (at 50,000 memories the first draw waits for it),
 * and seen whole its lines, a faint haze, are drawn at half the resolution.
 * The canvas carries data-star-count (stars drawn now), data-total, data-edges
 * (lines drawn now), data-lines (their resolution: half or whole), data-draws,
 * data-animating and data-draw-ms, for tests and for the curious.
 */
"use strict";

(function () {
  const COLORS = {
    user: [124, 196, 255],
    feedback: [255, 211, 110],
    project: [139, 240, 168],
    reference: [215, 166, 255],
    other: [208, 212, 224],
  };
  // Each category's galaxy sits in its own quarter of the sky; uncategorized ones in the middle.
  const CENTERS = {
    user: [0.25, 0.27],
    feedback: [0.75, 0.27],
    project: [0.25, 0.72],
    reference: [0.75, 0.72],
    other: [0.5, 0.5],
  };
  const DAY = 86400000;
  // How each relation is drawn: a galaxy's own links in its colour, links across galaxies
  // faint, supersedes dashed gold.
  const LINES = { user: 0, feedback: 1, project: 2, reference: 3, other: 4, across: 5, supersedes: 6 };
  const LINE_KEYS = Object.keys(LINES);
  const REPLAY_MS_PER_STAR = 60;
  const REPLAY_MS_MIN = 2500;
  const REPLAY_MS_MAX = 10000;

  function hash(text) {
    let h = 2166136261;
    for (let i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i);
      h = Math.imul(h, 16777619);
    }
    return h >>> 0;
  }

  // A seeded random number (mulberry32): set `state` to the seed, then call next(). One
  // shared state rather than a closure a star (50,000 closures are garbage).
  let state = 0;
  function next() {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  // A star with no relation of a kind shares this list (four lists a star were most of the garbage).
  const NONE = Object.freeze([]);
  const GROUPS = Object.keys(CENTERS);

  function moment(text) {
    if (!text) return NaN;
    const value = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(text) ? text + "T00:00:00Z" : text);
    return Number.isFinite(value) ? value : NaN;
  }

  // The k-th smallest of a list of numbers (it is reordered): the median and such of 50,000
  // places without a sort.
  function nth(list, k) {
    let lo = 0;
    let hi = list.length - 1;
    while (hi > lo) {
      const pivot = list[(lo + hi) >> 1];
      let i = lo;
      let j = hi;
      while (i <= j) {
        while (list[i] < pivot) i++;
        while (list[j] > pivot) j--;
        if (i <= j) { const t = list[i]; list[i] = list[j]; list[j] = t; i++; j--; }
      }
      if (k <= j) hi = j;
      else if (k >= i) lo = i;
      else return list[k];
    }
    return list[k];
  }

  function group(category) {
    return Object.prototype.hasOwnProperty.call(CENTERS, category) ? category : "other";
  }

  function Starmap(canvas, tip, options) {
    this.canvas = canvas;
    this.tip = tip;
    this.options = options || {};
    this.stars = [];
    this.time = Infinity;
    this.hover = null;
    this.draws = 0;
    this.visible = 0;
    this.frame = 0;
    this.playing = false;
    this.dust = [];
    state = 7;
    for (let i = 0; i < 260; i++) this.dust.push([next(), next(), next() * 0.9 + 0.2, next() * 0.35 + 0.05]);
    this.focused = null;
    this.view = { scale: 1, x: 0, y: 0 };
    this.onWheel = this.onWheel.bind(this);
    this.onDown = this.onDown.bind(this);
    this.onUp = this.onUp.bind(this);
    canvas.addEventListener("wheel", this.onWheel, { passive: false });
    canvas.addEventListener("pointerdown", this.onDown);
    window.addEventListener("pointerup", this.onUp);
    this.onMove = this.onMove.bind(this);
    this.onLeave = this.onLeave.bind(this);
    this.onClick = this.onClick.bind(this);
    this.onKey = this.onKey.bind(this);
    this.onBlur = this.onBlur.bind(this);
    canvas.addEventListener("mousemove", this.onMove);
    canvas.addEventListener("mouseleave", this.onLeave);
    canvas.addEventListener("click", this.onClick);
    canvas.addEventListener("keydown", this.onKey);
    canvas.addEventListener("blur", this.onBlur);
    this.resizer = new ResizeObserver(() => this.dirty());
    this.resizer.observe(canvas);
    canvas.starmap = this;
    this.mark();
  }

  // Where a star is drawn now, in CSS pixels from the canvas's corner (null when hidden).
  Starmap.prototype.positionOf = function (id) {
    const star = this.stars.find((s) => s.id === id);
    if (!star || Number.isNaN(star.x) || !this.isVisible(star)) return null;
    return { x: star.x, y: star.y };
  };

  // The stars as the server sends them (`/api/stars`): one list a field, and each relation as
  // the places of its two stars in them (`links`, `supersedes`: flat pairs). At 50,000 memories
  // this is what the first draw waits for, so it makes little garbage: one object a star, its
  // relation lists only when it has some, the relations as places in typed arrays (`relations`,
  // the birth order and the reading order are made when first asked for).
  Starmap.prototype.setStars = function (data, now) {
    this.now = now || Date.now();
    const ids = data.ids || [];
    const n = ids.length;
    // Each category and date text is sent once (`category_names`, `dates`), a star's as its
    // place there: each is made a group, or parsed, once.
    const named = (data.category_names || []).map(group);
    const times = (data.dates || []).map(moment);
    const groups = new Array(n);
    const counts = {};
    for (let i = 0; i < n; i++) {
      const g = named[data.categories[i]] || "other";
      groups[i] = g;
      counts[g] = (counts[g] || 0) + 1;
    }
    this.counts = counts;
    // A small sky gets bigger stars; a sky of thousands, finer ones (or it is all blobs).
    const grow = n < 60 ? 1.7 : n < 600 ? 1.25 : n < 2000 ? 0.8 : 0.42;
    this.dense = n >= 2000;
    const stars = new Array(n);
    let first = Infinity;
    let last = -Infinity;
    for (let i = 0; i < n; i++) {
      const g = groups[i];
      state = hash(ids[i]);
      // Distances are in units of the galaxy's room (its quarter of the sky): a big
      // category fills its room, a small one stays compact.
      const spread = Math.min(1, (g === "other" ? 0.15 : 0.3) + 0.1 * Math.sqrt(counts[g]));
      // Many stars: fewer in the core (a square root piles them into one blob), more in the arms.
      const distance = spread * (counts[g] > 400 ? Math.pow(next(), 0.75) : Math.sqrt(next()));
      const angle = next() * Math.PI * 2 + distance * 2.2;
      const updated = times[data.updated[i]];
      const created = times[data.created[i]];
      const age = Number.isFinite(updated) ? Math.max(0, (this.now - updated) / DAY) : 365;
      const born = Number.isFinite(created) ? created : updated;
      if (born < first) first = born;
      if (born > last) last = born;
      stars[i] = {
        id: ids[i],
        at: i,
        description: data.descriptions[i] || "",
        group: g,
        dx: Math.cos(angle) * distance,
        dy: Math.sin(angle) * distance,
        // (Numbers from the first: a field that held a whole number and is given a fraction
        // makes every star over again.)
        x: NaN,
        y: NaN,
        radius: Math.max(0.8, grow * Math.min(7, 1.2 + 1.2 * Math.log2(1 + (data.lengths[i] || 0) / 160))),
        brightness: 0.28 + 0.72 * Math.exp(-age / 60),
        born: born,
        rank: -1,
        linksTo: NONE,
        linkedFrom: NONE,
        supersedes: NONE,
        supersededBy: NONE,
      };
    }
    this.stars = stars;
    this.first = Number.isFinite(first) ? first : this.now;
    this.last = Number.isFinite(last) ? last : this.now;
    this._dated = null;
    this._order = null;
    this._byId = null;
    this._relations = null;
    // Each relation as the places of its two stars, its kind (0 a link, 1 supersedes) and how it
    // is drawn (`LINES`); and each star's relations both ways, for the highlight, the keyboard's
    // words and the list.
    const links = data.links || [];
    const supersedes = data.supersedes || [];
    const most = (links.length + supersedes.length) >> 1;
    const from = new Int32Array(most);
    const to = new Int32Array(most);
    const kinds = new Uint8Array(most);
    const line = new Uint8Array(most);
    let m = 0;
    const add = (list, key, value) => {
      const had = list[key];
      if (had === NONE) list[key] = [value];
      else had.push(value);
    };
    for (const [kind, pairs] of [[0, links], [1, supersedes]]) {
      for (let k = 0; k + 1 < pairs.length; k += 2) {
        const a = stars[pairs[k]];
        const b = stars[pairs[k + 1]];
        if (!a || !b || a === b) continue;
        from[m] = a.at;
        to[m] = b.at;
        kinds[m] = kind;
        line[m] = kind ? LINES.supersedes : a.group === b.group ? LINES[a.group] : LINES.across;
        m++;
        if (kind) { add(a, "supersedes", b); add(b, "supersededBy", a); }
        else { add(a, "linksTo", b); add(b, "linkedFrom", a); }
      }
    }
    this.from = from.subarray(0, m);
    this.to = to.subarray(0, m);
    this.kinds = kinds.subarray(0, m);
    this.lines = line.subarray(0, m);
    this.settle();
    if (this.hover) this.hover = this.byId.get(this.hover.id) || null;
    if (this.focused) this.focused = this.byId.get(this.focused.id) || null;
    this.sprites = {};
    this.looks = null;
    this.dirty();
  };

  // Made when first asked for (a sort of 50,000 stars by a text is 50-100 ms).
  Object.defineProperties(Starmap.prototype, {
    // Each relation as [from star, to star, "link" or "supersedes"].
    relations: { get: function () {
      if (!this._relations) {
        const stars = this.stars || [];
        this._relations = Array.from(this.from || [], (a, k) =>
          [stars[a], stars[this.to[k]], this.kinds[k] ? "supersedes" : "link"]);
      }
      return this._relations;
    } },
    byId: { get: function () {
      if (!this._byId) this._byId = new Map((this.stars || []).map((s) => [s.id, s]));
      return this._byId;
    } },
    // Birth order, for the replay: one star after another, even when many share a date.
    dated: { get: function () {
      if (!this._dated) {
        this._dated = (this.stars || []).filter((s) => Number.isFinite(s.born))
          .sort((a, b) => a.born - b.born || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
        this._dated.forEach((s, i) => { s.rank = i; });
      }
      return this._dated;
    } },
    // Reading order, for the keyboard's next and previous and the list: category by
    // category, then by id.
    order: { get: function () {
      if (!this._order) {
        const place = {};
        GROUPS.forEach((g, i) => { place[g] = i; });
        this._order = (this.stars || []).slice().sort((a, b) => place[a.group] - place[b.group] ||
          (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      }
      return this._order;
    } },
  });

  // Linked memories near each other: each star is drawn toward the middle of the stars of its
  // galaxy it links with (or that link to it), held by a spring to its own place, a few rounds.
  // Linear in stars and links; unlinked stars keep their place, each galaxy stays in its room.
  // (On places in typed arrays: with a Map a star and a list of its neighbours each, it was
  // 0.3-0.5 s at 50,000 memories.)
  Starmap.prototype.settle = function () {
    const ROUNDS = 10;
    const HOLD = 0.5;
    const stars = this.stars;
    const n = stars.length;
    const from = this.from;
    const to = this.to;
    // The neighbours in the same galaxy, both ways, a star's after each other (`first`).
    const first = new Int32Array(n + 1);
    for (let k = 0; k < from.length; k++) {
      if (stars[from[k]].group !== stars[to[k]].group) continue;
      first[from[k] + 1]++;
      first[to[k] + 1]++;
    }
    for (let i = 0; i < n; i++) first[i + 1] += first[i];
    if (!first[n]) return;
    const near = new Int32Array(first[n]);
    const filled = first.slice(0, n);
    for (let k = 0; k < from.length; k++) {
      const a = from[k];
      const b = to[k];
      if (stars[a].group !== stars[b].group) continue;
      near[filled[a]++] = b;
      near[filled[b]++] = a;
    }
    // Each set of stars linked together (within a galaxy) gathers where its first star (by id)
    // is, in a small cloud of its own; then each is drawn toward the ones it links with.
    const root = new Int32Array(n);
    for (let i = 0; i < n; i++) root[i] = i;
    const find = (i) => {
      let r = i;
      while (root[r] !== r) r = root[r];
      while (root[i] !== r) { const up = root[i]; root[i] = r; i = up; }
      return r;
    };
    for (let k = 0; k < from.length; k++) {
      if (stars[from[k]].group !== stars[to[k]].group) continue;
      const a = find(from[k]);
      const b = find(to[k]);
      if (a === b) continue;
      if (stars[a].id < stars[b].id) root[b] = a;
      else root[a] = b;
    }
    const sizes = new Int32Array(n);
    for (let i = 0; i < n; i++) if (first[i + 1] > first[i]) sizes[find(i)]++;
    const dx = new Float64Array(n);
    const dy = new Float64Array(n);
    const hx = new Float64Array(n);
    const hy = new Float64Array(n);
    for (let i = 0; i < n; i++) { dx[i] = stars[i].dx; dy[i] = stars[i].dy; }
    for (let i = 0; i < n; i++) {
      if (first[i + 1] === first[i]) continue;
      const r = root[i];
      const spread = Math.min(0.6, 0.1 + 0.035 * Math.sqrt(sizes[r]));
      hx[i] = r === i ? dx[i] : dx[r] + dx[i] * spread;
      hy[i] = r === i ? dy[i] : dy[r] + dy[i] * spread;
    }
    for (let i = 0; i < n; i++) {
      if (first[i + 1] === first[i]) continue;
      dx[i] = hx[i];
      dy[i] = hy[i];
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < n; i++) {
        const lo = first[i];
        const hi = first[i + 1];
        if (lo === hi) continue;
        let x = 0;
        let y = 0;
        for (let j = lo; j < hi; j++) { x += dx[near[j]]; y += dy[near[j]]; }
        dx[i] = HOLD * hx[i] + (1 - HOLD) * (0.5 * dx[i] + 0.5 * x / (hi - lo));
        dy[i] = HOLD * hy[i] + (1 - HOLD) * (0.5 * dy[i] + 0.5 * y / (hi - lo));
      }
    }
    for (let i = 0; i < n; i++) {
      if (first[i + 1] === first[i]) continue;
      const far = Math.hypot(dx[i], dy[i]);
      stars[i].dx = far > 1 ? dx[i] / far : dx[i];
      stars[i].dy = far > 1 ? dy[i] / far : dy[i];
    }
  };

  // Zoom (by `factor`, around a point of the canvas) and pan (by dx, dy CSS pixels).
  Starmap.prototype.zoomBy = function (factor, x, y) {
    const scale = Math.max(1, Math.min(40, this.view.scale * factor));
    const applied = scale / this.view.scale;
    const cx = x === undefined ? this.w / 2 : x;
    const cy = y === undefined ? this.h / 2 : y;
    this.view.x = cx - (cx - this.view.x) * applied;
    this.view.y = cy - (cy - this.view.y) * applied;
    this.view.scale = scale;
    if (scale === 1) { this.view.x = 0; this.view.y = 0; }
    this.dirty();
  };

  Starmap.prototype.panBy = function (dx, dy) {
    if (this.view.scale === 1) return;
    this.view.x += dx;
    this.view.y += dy;
    this.dirty();
  };

  Starmap.prototype.resetView = function () {
    this.view = { scale: 1, x: 0, y: 0 };
    this.dirty();
  };

  // The sky must be drawn again (not only the hover ring over it).
  Starmap.prototype.dirty = function () {
    this.layerKey = null;
    this.request();
  };

  // The timeline: a fraction 0..1 of the span from the first birth to the last (1 = everything).
  Starmap.prototype.setFraction = function (fraction) {
    this.fraction = fraction;
    this.time = fraction >= 1 ? Infinity : this.first + (this.last - this.first) * fraction;
    this.dirty();
  };

  Starmap.prototype.isVisible = function (star) {
    if (this.limit !== null && this.limit !== undefined) return (this._dated || this.dated) && star.rank < this.limit;
    return !(star.born > this.time);
  };

  Starmap.prototype.fractionOf = function (time) {
    if (time === Infinity) return 1;
    return this.last > this.first ? Math.max(0, Math.min(1, (time - this.first) / (this.last - this.first))) : 1;
  };

  Starmap.prototype.request = function () {
    if (this.frame || this.playing) return;
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.draw(); });
  };

  Starmap.prototype.layout = function () {
    const dpr = window.devicePixelRatio || 1;
    const w = this.canvas.clientWidth;
    const h = this.canvas.clientHeight;
    if (this.canvas.width !== Math.round(w * dpr) || this.canvas.height !== Math.round(h * dpr)) {
      this.canvas.width = Math.round(w * dpr);
      this.canvas.height = Math.round(h * dpr);
    }
    this.w = w;
    this.h = h;
    if (this.dpr !== dpr) this.sprites = {};
    this.dpr = dpr;
    // Each galaxy stays inside its quarter of the sky, whatever the shape of the screen.
    const room = 0.4 * Math.min(w / 2, h / 2);
    const roomX = Math.min(0.22 * w, room * 1.3);
    const roomY = Math.min(0.2 * h, room);
    const v = this.view;
    this.stars.forEach((s) => {
      const c = CENTERS[s.group];
      s.x = (c[0] * w + s.dx * roomX) * v.scale + v.x;
      s.y = (c[1] * h + s.dy * roomY) * v.scale + v.y;
    });
  };

  // Times of birth, one per day that has one, for the timeline's arrow keys.
  Starmap.prototype.births = function () {
    const days = [];
    for (const s of this.dated || []) {
      const day = Math.floor(s.born / DAY);
      if (!days.length || days[days.length - 1][0] !== day) days.push([day, s.born]);
      else days[days.length - 1][1] = s.born;
    }
    return days.map((d) => d[1]);
  };

  // One step along the timeline: to the next (or previous) day a memory was born.
  Starmap.prototype.step = function (direction) {
    const times = this.births();
    if (!times.length) return;
    const now = this.time === Infinity ? Infinity : this.time;
    let to;
    if (direction > 0) {
      to = times.find((t) => t > now);
      if (to === undefined || to === times[times.length - 1]) { this.setFraction(1); return; }
    } else {
      const before = times.filter((t) => t < (now === Infinity ? times[times.length - 1] + 1 : now));
      to = before.length ? before[before.length - 1] : times[0];
      if (now === Infinity) to = times.length > 1 ? times[times.length - 2] : times[0];
    }
    this.fraction = this.fractionOf(to);
    this.time = to;
    this.dirty();
  };

  // A star as a small image (glow and core), one per colour, size and brightness step.
  Starmap.prototype.sprite = function (star, newborn) {
    const dpr = this.dpr;
    if (!newborn && star.sprite && star.spriteFor === this.sprites) return star.sprite;
    const radius = Math.round(star.radius * 4) / 4;
    const light = Math.round(star.brightness * 8) / 8;
    const key = star.group + radius + ":" + light + (newborn ? "n" : "") + ":" + dpr + (this.dense ? "d" : "");
    let made = this.sprites[key];
    if (made) return made;
    const [r, g, b] = COLORS[star.group];
    const glow = radius * (newborn ? 7 : this.dense ? 2.6 : 4);
    const size = Math.ceil(glow * 2 * dpr) + 2;
    const canvas = document.createElement("canvas");
    canvas.width = size;
    canvas.height = size;
    const ctx = canvas.getContext("2d");
    const c = size / 2;
    const halo = ctx.createRadialGradient(c, c, 0, c, c, glow * dpr);
    halo.addColorStop(0, "rgba(" + r + "," + g + "," + b + "," + ((this.dense ? 0.3 : 0.42) * light).toFixed(3) + ")");
    halo.addColorStop(1, "rgba(" + r + "," + g + "," + b + ",0)");
    ctx.fillStyle = halo;
    ctx.fillRect(0, 0, size, size);
    const mix = 0.35 + 0.5 * light;
    ctx.fillStyle = "rgba(" + Math.round(r + (255 - r) * mix * 0.6) + "," + Math.round(g + (255 - g) * mix * 0.6) + "," +
      Math.round(b + (255 - b) * mix * 0.6) + "," + (0.35 + 0.65 * light).toFixed(3) + ")";
    ctx.beginPath();
    ctx.arc(c, c, Math.max(0.6, radius) * dpr, 0, Math.PI * 2);
    ctx.fill();
    made = { canvas: canvas, half: size / 2 / dpr, size: size / dpr };
    this.sprites[key] = made;
    if (!newborn) { star.sprite = made; star.spriteFor = this.sprites; }
    return made;
  };

  Starmap.prototype.draw = function () {
    const started = performance.now();
    this.layout();
    const key = [this.w, this.h, this.dpr, this.time, this.limit, this.playing, this.view.scale, this.view.x, this.view.y].join(":");
    if (this.layerKey !== key || !this.layer) {
      this.drawLayer();
      this.layerKey = key;
    }
    const ctx = this.canvas.getContext("2d");
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.drawImage(this.layer, 0, 0);
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    if (this.hover && this.isVisible(this.hover)) {
      // Its relations lit, and a ring on each star it is related to.
      const star = this.hover;
      const others = star.linksTo.concat(star.linkedFrom, star.supersedes, star.supersededBy).filter((o) => this.isVisible(o));
      ctx.lineWidth = 1.4;
      ctx.strokeStyle = "rgba(255,255,255,0.75)";
      ctx.beginPath();
      for (const o of others) { ctx.moveTo(star.x, star.y); ctx.lineTo(o.x, o.y); }
      ctx.stroke();
      ctx.strokeStyle = "rgba(255,236,170,0.85)";
      ctx.lineWidth = 1;
      ctx.beginPath();
      for (const o of others) { ctx.moveTo(o.x + o.radius + 3.5, o.y); ctx.arc(o.x, o.y, o.radius + 3.5, 0, Math.PI * 2); }
      ctx.stroke();
      this.lit = others.length;
      ctx.strokeStyle = "rgba(255,255,255,0.9)";
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      ctx.arc(this.hover.x, this.hover.y, this.hover.radius + 5, 0, Math.PI * 2);
      ctx.stroke();
    }
    if (!this.hover) this.lit = 0;
    this.draws++;
    this.drawMs = performance.now() - started;
    this.mark();
    if (this.options.onDraw) this.options.onDraw(this);
  };

  // The sky, the labels, the relations and the stars, into an offscreen layer.
  Starmap.prototype.drawLayer = function () {
    if (!this.layer) this.layer = document.createElement("canvas");
    const layer = this.layer;
    const { w, h } = this;
    // The empty sky (its gradient and dust) is the same until the size changes: drawn once.
    if (layer.width !== this.canvas.width || layer.height !== this.canvas.height || !this.background) {
      layer.width = this.canvas.width;
      layer.height = this.canvas.height;
      const background = this.background || (this.background = document.createElement("canvas"));
      background.width = layer.width;
      background.height = layer.height;
      const b = background.getContext("2d");
      b.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
      const sky = b.createRadialGradient(w * 0.5, h * 0.45, 0, w * 0.5, h * 0.5, Math.max(w, h) * 0.75);
      sky.addColorStop(0, "#141b33");
      sky.addColorStop(1, "#05070f");
      b.fillStyle = sky;
      b.fillRect(0, 0, w, h);
      this.dust.forEach(([x, y, r, a]) => {
        b.fillStyle = "rgba(200,210,255," + a + ")";
        b.fillRect(x * w, y * h, r, r);
      });
    }
    const ctx = layer.getContext("2d");
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.globalCompositeOperation = "copy";
    ctx.drawImage(this.background, 0, 0);
    ctx.globalCompositeOperation = "source-over";
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    const all = this.everything();
    const stars = this.stars;
    const shown = {};
    for (const s of stars) if (all || this.isVisible(s)) shown[s.group] = (shown[s.group] || 0) + 1;
    const xs = {};
    const ys = {};
    const filled = {};
    for (const g of Object.keys(shown)) { xs[g] = new Float64Array(shown[g]); ys[g] = new Float64Array(shown[g]); filled[g] = 0; }
    for (const s of stars) {
      if (!all && !this.isVisible(s)) continue;
      const at = filled[s.group]++;
      xs[s.group][at] = s.x;
      ys[s.group][at] = s.y - s.radius;
    }
    this.shown = shown;
    // Each galaxy's name on it: over the middle of its stars, just above the highest of them
    // (a stray star or two aside), and inside the sky; only while it has stars.
    ctx.font = "600 12px system-ui, sans-serif";
    ctx.textAlign = "center";
    ctx.textBaseline = "alphabetic";
    this.labels = [];
    const ranked = (list, at) => nth(list, Math.min(list.length - 1, Math.floor(at * list.length)));
    Object.keys(shown).forEach((g) => {
      const [r, gr, b] = COLORS[g];
      const text = g === "other" ? "uncategorized" : g;
      const half = ctx.measureText(text).width / 2;
      const x = Math.max(half + 2, Math.min(w - half - 2, ranked(xs[g], 0.5)));
      const y = Math.max(16, ranked(ys[g], 0.03) - 8);
      ctx.fillStyle = "rgba(" + r + "," + gr + "," + b + ",0.65)";
      ctx.fillText(text, x, y);
      const width = ctx.measureText(text).width;
      this.labels.push({ group: g, text: text, left: x - width / 2, right: x + width / 2, top: y - 12, bottom: y + 3 });
    });
    this.edgesDrawn = this.drawLines(ctx, all);
    ctx.globalCompositeOperation = "lighter";
    const visible = this.dense ? this.drawDense(ctx, all) : this.drawSprites(ctx);
    ctx.globalCompositeOperation = "source-over";
    this.visible = visible;
  };

  // Every star is in the sky (no timeline, no replay): nothing to ask of each.
  Starmap.prototype.everything = function () {
    return (this.limit === null || this.limit === undefined) && this.time === Infinity;
  };

  // The relations as lines. One path per kind of line (a category's links, supersedes): a
  // handful of strokes, not one per relation. In a sky of thousands seen whole the lines are a
  // faint haze (at 50,000 memories 50,000 lines, 0.1 s to draw, most of it the pixels of the
  // long ones across the sky): there they are drawn at half the resolution, half the pixels a
  // line, and laid over the sky smoothly; zoomed in (twice or more), they are drawn sharp.
  Starmap.prototype.drawLines = function (ctx, all) {
    const stars = this.stars;
    const from = this.from || [];
    const to = this.to || [];
    const lines = this.lines || [];
    const paths = new Array(LINE_KEYS.length);
    let edges = 0;
    for (let k = 0; k < from.length; k++) {
      const a = stars[from[k]];
      const b = stars[to[k]];
      if (!all && (!this.isVisible(a) || !this.isVisible(b))) continue;
      edges++;
      const path = paths[lines[k]] || (paths[lines[k]] = new Path2D());
      path.moveTo(a.x, a.y);
      path.lineTo(b.x, b.y);
    }
    if (!edges) return 0;
    const haze = this.dense && this.view.scale < 2;
    this.haze = haze;
    let into = ctx;
    if (haze) {
      const hw = Math.max(1, Math.ceil(this.layer.width / 2));
      const hh = Math.max(1, Math.ceil(this.layer.height / 2));
      const half = this.halfCanvas || (this.halfCanvas = document.createElement("canvas"));
      if (half.width !== hw || half.height !== hh) { half.width = hw; half.height = hh; }
      into = half.getContext("2d");
      into.setTransform(1, 0, 0, 1, 0, 0);
      into.clearRect(0, 0, hw, hh);
      // (At the same alpha: a line is then two pixels wide and each fainter, which over a
      // sky's 8-bit colours looks as the lines drawn whole did.)
      into.setTransform(this.dpr / 2, 0, 0, this.dpr / 2, 0, 0);
    }
    // A link across galaxies is drawn faint (in a big sky they would be a veil over it):
    // hovering or focusing a star lights its own in full.
    into.lineWidth = 1;
    LINE_KEYS.forEach((key, at) => {
      const path = paths[at];
      if (!path) return;
      if (key === "supersedes") {
        into.strokeStyle = "rgba(255,200,110,0.55)";
        into.setLineDash([4, 4]);
      } else if (key === "across") {
        into.strokeStyle = "rgba(190,200,235," + (this.dense ? 0.025 : 0.22) + ")";
        into.setLineDash([]);
      } else {
        const [r, g, bl] = COLORS[key];
        into.strokeStyle = "rgba(" + r + "," + g + "," + bl + "," + (this.dense ? 0.08 : 0.32) + ")";
        into.setLineDash([]);
      }
      into.stroke(path);
    });
    into.setLineDash([]);
    if (haze) {
      ctx.setTransform(1, 0, 0, 1, 0, 0);
      ctx.imageSmoothingEnabled = true;
      ctx.drawImage(this.halfCanvas, 0, 0, this.halfCanvas.width * 2, this.halfCanvas.height * 2);
      ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    }
    return edges;
  };

  // A sky of hundreds: each star its own sprite (a glow and a round core).
  Starmap.prototype.drawSprites = function (ctx) {
    const fresh = Math.max(1, Math.round((this.dated || []).length * 0.04));
    let visible = 0;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    const dpr = this.dpr;
    for (const s of this.stars) {
      if (!this.isVisible(s)) continue;
      visible++;
      const sprite = this.sprite(s, this.playing && s.rank >= this.limit - fresh);
      ctx.drawImage(sprite.canvas, Math.round((s.x - sprite.half) * dpr), Math.round((s.y - sprite.half) * dpr));
    }
    return visible;
  };

  // A sky of thousands: canvas calls per star are too slow (a few microseconds each, without
  // a GPU), so the stars are written as pixels, added up as light adds up, into one image;
  // their glow is the same at a quarter of the size, scaled up smoothly. Both are then laid
  // over the sky in two draws. Thousands of stars cost a few milliseconds.
  Starmap.prototype.drawDense = function (ctx, all) {
    const dpr = this.dpr;
    const W = Math.max(1, Math.round(this.w * dpr));
    const H = Math.max(1, Math.round(this.h * dpr));
    const GW = Math.max(1, Math.ceil(W / 4));
    const GH = Math.max(1, Math.ceil(H / 4));
    if (!this.pixels || this.pixels.width !== W || this.pixels.height !== H) {
      this.starCanvas = Object.assign(document.createElement("canvas"), { width: W, height: H });
      this.glowCanvas = Object.assign(document.createElement("canvas"), { width: GW, height: GH });
      this.pixels = this.starCanvas.getContext("2d").createImageData(W, H);
      this.glowPixels = this.glowCanvas.getContext("2d").createImageData(GW, GH);
    }
    const data = this.pixels.data;
    const glow = this.glowPixels.data;
    data.fill(0);
    glow.fill(0);
    let visible = 0;
    for (const s of this.stars) {
      if (!all && !this.isVisible(s)) continue;
      visible++;
      const [r, g, b] = COLORS[s.group];
      const light = 0.45 + 0.55 * s.brightness;
      const mix = (0.35 + 0.5 * s.brightness) * 0.6;
      const cr = (r + (255 - r) * mix) * light;
      const cg = (g + (255 - g) * mix) * light;
      const cb = (b + (255 - b) * mix) * light;
      const side = Math.max(1, Math.round(Math.max(1.3, s.radius * 1.7) * dpr));
      const x0 = Math.round(s.x * dpr - side / 2);
      const y0 = Math.round(s.y * dpr - side / 2);
      for (let y = Math.max(0, y0); y < Math.min(H, y0 + side); y++) {
        for (let x = Math.max(0, x0); x < Math.min(W, x0 + side); x++) {
          const i = (y * W + x) * 4;
          data[i] += cr;
          data[i + 1] += cg;
          data[i + 2] += cb;
          data[i + 3] = 255;
        }
      }
      const gx = Math.floor(s.x * dpr / 4);
      const gy = Math.floor(s.y * dpr / 4);
      if (gx >= 0 && gy >= 0 && gx < GW && gy < GH) {
        const j = (gy * GW + gx) * 4;
        const k = 0.35 * s.brightness + 0.1;
        glow[j] += r * k;
        glow[j + 1] += g * k;
        glow[j + 2] += b * k;
        glow[j + 3] = 255;
      }
    }
    this.starCanvas.getContext("2d").putImageData(this.pixels, 0, 0);
    this.glowCanvas.getContext("2d").putImageData(this.glowPixels, 0, 0);
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.imageSmoothingEnabled = true;
    ctx.drawImage(this.glowCanvas, 0, 0, GW, GH, -2 * dpr, -2 * dpr, W + 4 * dpr, H + 4 * dpr);
    ctx.drawImage(this.starCanvas, 0, 0);
    return visible;
  };

  Starmap.prototype.mark = function () {
    const d = this.canvas.dataset;
    d.starCount = String(this.visible);
    d.total = String(this.stars.length);
    d.draws = String(this.draws);
    d.edges = String(this.edgesDrawn || 0);
    d.animating = String(this.playing);
    d.drawMs = this.drawMs === undefined ? "" : this.drawMs.toFixed(2);
    d.lit = String(this.lit || 0);
    d.zoom = String(Math.round(this.view.scale * 100) / 100);
    d.lines = this.haze ? "half" : "whole";  // the resolution the lines are drawn at
  };

  Starmap.prototype.starAt = function (x, y) {
    let best = null;
    let bestDistance = Infinity;
    for (const s of this.stars) {
      if (!this.isVisible(s) || Number.isNaN(s.x)) continue;
      const d = Math.hypot(s.x - x, s.y - y);
      if (d <= Math.max(s.radius + 5, 9) && d < bestDistance) {
        best = s;
        bestDistance = d;
      }
    }
    return best;
  };

  // The tooltip by a point of the map (the pointer, or a star the keyboard is on).
  Starmap.prototype.showTip = function (star, x, y) {
    this.tip.replaceChildren();
    const title = document.createElement("strong");
    title.textContent = star.id;
    this.tip.append(title, document.createTextNode(star.description));
    this.tip.hidden = false;
    // Inside the map: to the left of the pointer near the right edge, above it near the bottom.
    const width = this.tip.offsetWidth;
    const height = this.tip.offsetHeight;
    const left = x + 12 + width > this.w ? Math.max(0, x - 12 - width) : x + 12;
    const top = y + 12 + height > this.h ? Math.max(0, y - 12 - height) : y + 12;
    this.tip.style.left = left + "px";
    this.tip.style.top = top + "px";
  };

  Starmap.prototype.onMove = function (event) {
    if (this.drag && event.buttons) {
      const dx = event.clientX - this.drag.x;
      const dy = event.clientY - this.drag.y;
      this.drag.x = event.clientX;
      this.drag.y = event.clientY;
      this.drag.moved += Math.abs(dx) + Math.abs(dy);
      this.panBy(dx, dy);
      return;
    }
    const rect = this.canvas.getBoundingClientRect();
    const x = event.clientX - rect.left;
    const y = event.clientY - rect.top;
    const star = this.starAt(x, y);
    if (star) this.showTip(star, x, y);
    else if (this.focused) this.showTip(this.focused, this.focused.x, this.focused.y);
    else this.tip.hidden = true;
    this.canvas.classList.toggle("pointing", !!star);
    const lit = star || this.focused;
    if (lit !== this.hover) {
      this.hover = lit;
      this.request();
    }
  };

  Starmap.prototype.onLeave = function () {
    if (this.focused) { this.showTip(this.focused, this.focused.x, this.focused.y); return; }
    this.tip.hidden = true;
    if (this.hover) {
      this.hover = null;
      this.request();
    }
  };

  // What a screen reader says of a star: its id, its description, its category, its relations.
  Starmap.prototype.describe = function (star) {
    const names = (list) => list.slice(0, 6).map((s) => s.id).join(", ") + (list.length > 6 ? " and " + (list.length - 6) + " more" : "");
    const parts = [star.id + ": " + (star.description || "(no description)"), star.group === "other" ? "uncategorized" : star.group];
    if (star.linksTo.length) parts.push("links to " + names(star.linksTo));
    if (star.linkedFrom.length) parts.push("linked from " + names(star.linkedFrom));
    if (star.supersedes.length) parts.push("supersedes " + names(star.supersedes));
    if (star.supersededBy.length) parts.push("superseded by " + names(star.supersededBy));
    if (!star.linksTo.length && !star.linkedFrom.length && !star.supersedes.length && !star.supersededBy.length) parts.push("no links");
    return parts.join("; ") + ".";
  };

  // The keyboard's star: lit like a hovered one, its tooltip shown, and said aloud.
  Starmap.prototype.focusStar = function (star) {
    this.focused = star;
    this.hover = star;
    this.canvas.dataset.focus = star ? star.id : "";
    if (star) {
      this.layout();
      this.showTip(star, star.x, star.y);
    } else {
      this.tip.hidden = true;
    }
    if (this.options.onFocus) this.options.onFocus(star, star ? this.describe(star) : "");
    this.request();
  };

  // The star nearest to `from` in a direction (dx, dy), within 60 degrees of it.
  Starmap.prototype.toward = function (from, dx, dy) {
    let best = null;
    let bestScore = Infinity;
    for (const s of this.stars) {
      if (s === from || !this.isVisible(s)) continue;
      const x = s.x - from.x;
      const y = s.y - from.y;
      const along = x * dx + y * dy;
      if (along <= 0) continue;
      const across = Math.abs(x * dy - y * dx);
      if (across > along * 1.8) continue;
      const score = along + 2 * across;
      if (score < bestScore) { best = s; bestScore = score; }
    }
    return best;
  };

  // The keys on the map (one Tab stop): arrows go to the nearest star that way, N and P to the
  // next and previous in reading order, Home and End to the first and last, Enter opens it.
  Starmap.prototype.onKey = function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const shown = this.order.filter((s) => this.isVisible(s));
    if (!shown.length) return;
    const at = this.focused && this.isVisible(this.focused) ? this.focused : null;
    const index = at ? shown.indexOf(at) : -1;
    const arrows = { ArrowRight: [1, 0], ArrowLeft: [-1, 0], ArrowDown: [0, 1], ArrowUp: [0, -1] };
    let to;
    if (event.key === "Enter") {
      if (at && this.options.onOpen) { event.preventDefault(); this.options.onOpen(at.id); }
      return;
    } else if (event.key === "Escape") {
      if (!at) return;
      to = null;
    } else if (arrows[event.key]) {
      this.layout();
      to = at ? this.toward(at, arrows[event.key][0], arrows[event.key][1]) || at : shown[0];
    } else if (event.key === "n" || event.key === "N") {
      to = shown[(index + 1) % shown.length];
    } else if (event.key === "p" || event.key === "P") {
      to = shown[(index - 1 + shown.length) % shown.length];
    } else if (event.key === "+" || event.key === "=" || event.key === "-" || event.key === "0") {
      event.preventDefault();
      if (event.key === "0") this.resetView();
      else this.zoomBy(event.key === "-" ? 0.8 : 1.25, at ? at.x : undefined, at ? at.y : undefined);
      return;
    } else if (event.key === "Home") {
      to = shown[0];
    } else if (event.key === "End") {
      to = shown[shown.length - 1];
    } else {
      return;
    }
    event.preventDefault();
    event.stopPropagation();
    this.focusStar(to);
  };

  Starmap.prototype.onBlur = function () {
    if (!this.focused) return;
    this.focused = null;
    this.canvas.dataset.focus = "";
    this.tip.hidden = true;
    this.hover = null;
    this.request();
  };

  // The wheel zooms around the pointer; a drag pans (a drag is never a click).
  Starmap.prototype.onWheel = function (event) {
    event.preventDefault();
    const rect = this.canvas.getBoundingClientRect();
    this.zoomBy(event.deltaY < 0 ? 1.25 : 0.8, event.clientX - rect.left, event.clientY - rect.top);
  };

  Starmap.prototype.onDown = function (event) {
    this.drag = { x: event.clientX, y: event.clientY, moved: 0 };
  };

  Starmap.prototype.onUp = function () {
    if (this.drag) setTimeout(() => { this.drag = null; });
  };

  Starmap.prototype.onClick = function (event) {
    if (this.drag && this.drag.moved > 4) return;
    const rect = this.canvas.getBoundingClientRect();
    const star = this.starAt(event.clientX - rect.left, event.clientY - rect.top);
    if (star && this.options.onOpen) this.options.onOpen(star.id);
  };

  // The birth replay: the memory growing star by star, in order of `created`, with the
  // timeline following. Animates only while playing.
  Starmap.prototype.play = function () {
    if (this.playing) return;
    if (this.frame) { cancelAnimationFrame(this.frame); this.frame = 0; }
    const total = this.dated.length;
    const duration = Math.max(REPLAY_MS_MIN, Math.min(REPLAY_MS_MAX, total * REPLAY_MS_PER_STAR));
    const resume = this.time === Infinity ? 0 : this.dated.filter((s) => s.born <= this.time).length;
    const started = performance.now() - (total ? resume / total : 0) * duration;
    this.playing = true;
    this.mark();
    const step = (now) => {
      if (!this.playing) return;
      const progress = Math.min(1, (now - started) / duration);
      if (progress >= 1) {
        this.playing = false;
        this.limit = null;
        this.time = Infinity;
      } else {
        this.limit = Math.floor(progress * total);
        this.time = this.limit > 0 ? this.dated[this.limit - 1].born : this.first;
      }
      this.fraction = this.fractionOf(this.time);
      this.draw();
      if (this.options.onTime) this.options.onTime(this.fraction, this);
      if (this.playing) this.replay = requestAnimationFrame(step);
    };
    this.replay = requestAnimationFrame(step);
  };

  Starmap.prototype.pause = function () {
    if (!this.playing) return;
    this.playing = false;
    this.limit = null;
    cancelAnimationFrame(this.replay);
    this.mark();
    this.dirty();
  };

  Starmap.prototype.destroy = function () {
    this.pause();
    if (this.frame) cancelAnimationFrame(this.frame);
    this.resizer.disconnect();
    this.canvas.removeEventListener("mousemove", this.onMove);
    this.canvas.removeEventListener("mouseleave", this.onLeave);
    this.canvas.removeEventListener("click", this.onClick);
    this.canvas.removeEventListener("keydown", this.onKey);
    this.canvas.removeEventListener("wheel", this.onWheel);
    this.canvas.removeEventListener("pointerdown", this.onDown);
    window.removeEventListener("pointerup", this.onUp);
    this.canvas.removeEventListener("blur", this.onBlur);
  };

  Starmap.COLORS = COLORS;
  window.SageStarmap = Starmap;
})();
