/* The star map: every memory a star on a <canvas>.
 *
 * Colour by category, size by length, brightness by how recently the memory
 * was updated; each category is a small galaxy, and a memory keeps its place
 * (its position comes from a hash of its id). The canvas is drawn only when
 * something changes (data, size, hover, the timeline): there is no animation
 * loop, except while the birth replay plays. The canvas carries
 * data-star-count (stars drawn now), data-total, data-draws and data-animating,
 * for tests and for the curious.
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

  function random(seed) {
    let a = seed >>> 0;
    return function () {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  function moment(text) {
    if (!text) return NaN;
    const value = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(text) ? text + "T00:00:00Z" : text);
    return Number.isFinite(value) ? value : NaN;
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
    const rnd = random(7);
    for (let i = 0; i < 260; i++) this.dust.push([rnd(), rnd(), rnd() * 0.9 + 0.2, rnd() * 0.35 + 0.05]);
    this.onMove = this.onMove.bind(this);
    this.onLeave = this.onLeave.bind(this);
    this.onClick = this.onClick.bind(this);
    canvas.addEventListener("mousemove", this.onMove);
    canvas.addEventListener("mouseleave", this.onLeave);
    canvas.addEventListener("click", this.onClick);
    this.resizer = new ResizeObserver(() => this.request());
    this.resizer.observe(canvas);
    canvas.starmap = this;
    this.mark();
  }

  // Where a star is drawn now, in CSS pixels from the canvas's corner (null when hidden).
  Starmap.prototype.positionOf = function (id) {
    const star = this.stars.find((s) => s.id === id);
    if (!star || star.x === undefined || !this.isVisible(star)) return null;
    return { x: star.x, y: star.y };
  };

  Starmap.prototype.setStars = function (list, now) {
    this.now = now || Date.now();
    const counts = {};
    list.forEach((s) => { const g = group(s.category); counts[g] = (counts[g] || 0) + 1; });
    this.counts = counts;
    // A small sky gets bigger stars; a sky of thousands, finer ones.
    const grow = list.length < 60 ? 1.7 : list.length < 600 ? 1.25 : 1;
    this.stars = list.map((s) => {
      const g = group(s.category);
      const rnd = random(hash(s.id));
      // Distances are in units of the galaxy's room (its quarter of the sky): a big
      // category fills its room, a small one stays compact.
      const spread = Math.min(1, (g === "other" ? 0.15 : 0.3) + 0.1 * Math.sqrt(counts[g]));
      const distance = spread * Math.sqrt(rnd());
      const angle = rnd() * Math.PI * 2 + distance * 2.2;
      const updated = moment(s.updated);
      const created = moment(s.created);
      const age = Number.isFinite(updated) ? Math.max(0, (this.now - updated) / DAY) : 365;
      return {
        id: s.id,
        description: s.description || "",
        group: g,
        dx: Math.cos(angle) * distance,
        dy: Math.sin(angle) * distance,
        radius: grow * Math.max(1.2, Math.min(7, 1.2 + 1.2 * Math.log2(1 + (s.length || 0) / 160))),
        brightness: 0.28 + 0.72 * Math.exp(-age / 60),
        born: Number.isFinite(created) ? created : updated,
      };
    });
    let first = Infinity;
    let last = -Infinity;
    for (const s of this.stars) {
      if (!Number.isFinite(s.born)) continue;
      first = Math.min(first, s.born);
      last = Math.max(last, s.born);
    }
    this.first = Number.isFinite(first) ? first : this.now;
    this.last = Number.isFinite(last) ? last : this.now;
    // Birth order, for the replay: one star after another, even when many share a date.
    this.dated = this.stars.filter((s) => Number.isFinite(s.born))
      .sort((a, b) => a.born - b.born || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    this.stars.forEach((s) => { s.rank = -1; });
    this.dated.forEach((s, i) => { s.rank = i; });
    if (this.hover && !this.stars.some((s) => s.id === this.hover.id)) this.hover = null;
    this.request();
  };

  // The timeline: a fraction 0..1 of the span from the first birth to the last (1 = everything).
  Starmap.prototype.setFraction = function (fraction) {
    this.fraction = fraction;
    this.time = fraction >= 1 ? Infinity : this.first + (this.last - this.first) * fraction;
    this.request();
  };

  Starmap.prototype.isVisible = function (star) {
    if (this.limit !== null && this.limit !== undefined) return star.rank < this.limit;
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
    this.dpr = dpr;
    const room = 0.4 * Math.min(w / 2, h / 2);
    this.stars.forEach((s) => {
      const c = CENTERS[s.group];
      s.x = c[0] * w + s.dx * room * 1.3;
      s.y = c[1] * h + s.dy * room;
    });
    if (this.linkedFor !== this.stars) {
      this.linkedFor = this.stars;
      this.links = constellations(this.stars);
    }
  };

  // Faint lines joining each category's stars into a constellation: a minimum
  // spanning tree on the unit layout (so it does not depend on the canvas size).
  function constellations(stars) {
    const groups = {};
    stars.forEach((s) => { (groups[s.group] = groups[s.group] || []).push(s); });
    const links = [];
    Object.values(groups).forEach((members) => {
      if (members.length < 2 || members.length > 400) return;
      const inTree = new Array(members.length).fill(false);
      const best = new Array(members.length).fill(Infinity);
      const from = new Array(members.length).fill(-1);
      best[0] = 0;
      for (let k = 0; k < members.length; k++) {
        let next = -1;
        for (let i = 0; i < members.length; i++) if (!inTree[i] && (next < 0 || best[i] < best[next])) next = i;
        inTree[next] = true;
        if (from[next] >= 0) links.push([members[from[next]], members[next]]);
        for (let i = 0; i < members.length; i++) {
          if (inTree[i]) continue;
          const d = Math.hypot(members[i].dx - members[next].dx, members[i].dy - members[next].dy);
          if (d < best[i]) { best[i] = d; from[i] = next; }
        }
      }
    });
    return links;
  }

  Starmap.prototype.draw = function () {
    this.layout();
    const ctx = this.canvas.getContext("2d");
    const { w, h } = this;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    const sky = ctx.createRadialGradient(w * 0.5, h * 0.45, 0, w * 0.5, h * 0.5, Math.max(w, h) * 0.75);
    sky.addColorStop(0, "#141b33");
    sky.addColorStop(1, "#05070f");
    ctx.fillStyle = sky;
    ctx.fillRect(0, 0, w, h);
    this.dust.forEach(([x, y, r, a]) => {
      ctx.fillStyle = "rgba(200,210,255," + a + ")";
      ctx.fillRect(x * w, y * h, r, r);
    });
    ctx.font = "600 12px system-ui, sans-serif";
    ctx.textAlign = "center";
    const bottoms = {};
    for (const s of this.stars) bottoms[s.group] = Math.max(bottoms[s.group] || 0, s.y + s.radius);
    Object.keys(this.counts || {}).forEach((g) => {
      const [r, gr, b] = COLORS[g];
      const c = CENTERS[g];
      ctx.fillStyle = "rgba(" + r + "," + gr + "," + b + ",0.5)";
      ctx.fillText(g === "other" ? "uncategorized" : g, c[0] * w, Math.min(h - 8, (bottoms[g] || c[1] * h) + 18));
    });
    ctx.lineWidth = 1;
    for (const [a, b] of this.links || []) {
      if (!this.isVisible(a) || !this.isVisible(b)) continue;
      const [r, g, bl] = COLORS[a.group];
      ctx.strokeStyle = "rgba(" + r + "," + g + "," + bl + ",0.16)";
      ctx.beginPath();
      ctx.moveTo(a.x, a.y);
      ctx.lineTo(b.x, b.y);
      ctx.stroke();
    }
    ctx.globalCompositeOperation = "lighter";
    const fresh = Math.max(1, Math.round((this.dated || []).length * 0.04));
    let visible = 0;
    for (const s of this.stars) {
      if (!this.isVisible(s)) continue;
      visible++;
      const [r, g, b] = COLORS[s.group];
      const newborn = this.playing && s.rank >= this.limit - fresh;
      const glow = s.radius * (newborn ? 7 : 4);
      const halo = ctx.createRadialGradient(s.x, s.y, 0, s.x, s.y, glow);
      halo.addColorStop(0, "rgba(" + r + "," + g + "," + b + "," + (0.42 * s.brightness).toFixed(3) + ")");
      halo.addColorStop(1, "rgba(" + r + "," + g + "," + b + ",0)");
      ctx.fillStyle = halo;
      ctx.fillRect(s.x - glow, s.y - glow, glow * 2, glow * 2);
      const mix = 0.35 + 0.5 * s.brightness;
      ctx.fillStyle = "rgba(" + Math.round(r + (255 - r) * mix * 0.6) + "," + Math.round(g + (255 - g) * mix * 0.6) + "," +
        Math.round(b + (255 - b) * mix * 0.6) + "," + (0.35 + 0.65 * s.brightness).toFixed(3) + ")";
      ctx.beginPath();
      ctx.arc(s.x, s.y, s.radius, 0, Math.PI * 2);
      ctx.fill();
    }
    ctx.globalCompositeOperation = "source-over";
    if (this.hover && this.isVisible(this.hover)) {
      ctx.strokeStyle = "rgba(255,255,255,0.9)";
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      ctx.arc(this.hover.x, this.hover.y, this.hover.radius + 5, 0, Math.PI * 2);
      ctx.stroke();
    }
    this.visible = visible;
    this.draws++;
    this.mark();
    if (this.options.onDraw) this.options.onDraw(this);
  };

  Starmap.prototype.mark = function () {
    const d = this.canvas.dataset;
    d.starCount = String(this.visible);
    d.total = String(this.stars.length);
    d.draws = String(this.draws);
    d.animating = String(this.playing);
  };

  Starmap.prototype.starAt = function (x, y) {
    let best = null;
    let bestDistance = Infinity;
    for (const s of this.stars) {
      if (!this.isVisible(s) || s.x === undefined) continue;
      const d = Math.hypot(s.x - x, s.y - y);
      if (d <= Math.max(s.radius + 5, 9) && d < bestDistance) {
        best = s;
        bestDistance = d;
      }
    }
    return best;
  };

  Starmap.prototype.onMove = function (event) {
    const rect = this.canvas.getBoundingClientRect();
    const x = event.clientX - rect.left;
    const y = event.clientY - rect.top;
    const star = this.starAt(x, y);
    if (star) {
      this.tip.replaceChildren();
      const title = document.createElement("strong");
      title.textContent = star.id;
      this.tip.append(title, document.createTextNode(star.description));
      this.tip.style.left = x + "px";
      this.tip.style.top = y + "px";
      this.tip.hidden = false;
    } else {
      this.tip.hidden = true;
    }
    this.canvas.classList.toggle("pointing", !!star);
    if (star !== this.hover) {
      this.hover = star;
      this.request();
    }
  };

  Starmap.prototype.onLeave = function () {
    this.tip.hidden = true;
    if (this.hover) {
      this.hover = null;
      this.request();
    }
  };

  Starmap.prototype.onClick = function (event) {
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
    this.request();
  };

  Starmap.prototype.destroy = function () {
    this.pause();
    if (this.frame) cancelAnimationFrame(this.frame);
    this.resizer.disconnect();
    this.canvas.removeEventListener("mousemove", this.onMove);
    this.canvas.removeEventListener("mouseleave", this.onLeave);
    this.canvas.removeEventListener("click", this.onClick);
  };

  Starmap.COLORS = COLORS;
  window.SageStarmap = Starmap;
})();
