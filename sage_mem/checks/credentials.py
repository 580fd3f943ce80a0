"""Secret detection: credentials that must not sit in a memory file or leave in hook output.

`find_secrets(text)` finds, and reports by line and column:

- tokens with a known shape: AWS access key ids (AKIA…/ASIA…) and STS session tokens
  (IQoJb3JpZ2luX2Vj…, FwoGZXIvYXdzE…), Alibaba Cloud (LTAI…), Tencent Cloud (AKID…) and
  Volcengine (AKLT…) access keys, a private key in base64 (LS0tLS1CRUdJTi…, as a kubeconfig
  holds one), Databricks (dapi…), Notion (ntn_…, secret_…), Postman (PMAK-…), Tailscale
  (tskey-…), Grafana (glsa_…, glc_…), New Relic (NRAK-…), Bitbucket (ATBB…), Pulumi (pul-…),
  Fly.io (fo1_…), Supabase (sbp_…), Sentry (sntrys_…, sntryu_…), Mapbox (sk.eyJ1I…) and
  Vercel (vcp_…), Facebook (EAA…) and Twitter/X app bearer (AAAA…%3D…) tokens, Azure AD
  client secrets (`abc8Q~…`), the SK of an `AK … SK …` pair (Baidu, Huawei), GitHub tokens
  (ghp_/gho_/ghu_/ghs_/ghr_, github_pat_), GitLab (glpat-), Slack (xoxa/b/p/r-),
  OpenAI and Anthropic keys (sk-…, sk-proj-…, sk-ant-…), Stripe live/test keys,
  Google API keys (AIza…), JWTs (eyJ….eyJ….…), PyPI upload tokens (pypi-AgE…),
  Hugging Face (hf_…, api_org_…), npm (npm_…), SendGrid (SG.….…), DigitalOcean (dop_v1_…),
  Twilio (SK…), Mailgun (key-…), Shopify (shpat_…), Square (sq0atp-…), Atlassian
  (ATATT3…), Linear (lin_api_…), Google OAuth client secrets (GOCSPX-…), Groq
  (gsk_…), Replicate (r8_…), Doppler (dp.st.…), Vault (hvs.…), Discord bot
  (base64 of a bot id, then two dotted parts) and Telegram bot (`id:AA…`) tokens,
  age secret keys, Azure storage keys in a connection string (AccountKey=…), the
  signature of a signed URL (Azure SAS `sig=`, S3/GCS `X-Amz-/X-Goog-Signature=`),
  bearer tokens and HTTP basic credentials (`Authorization: Basic …` decoding to
  `user:password`), a password on a command line (`mysql -u root -pS3cret`,
  `sshpass -p S3cret`, `curl -u deploy:S3cret`, `docker login -p S3cret`,
  `redis-cli -a S3cret`), Slack webhook URLs
  (hooks.slack.com/services/…) and the webhooks of Discord, Teams, Feishu/Lark
  and WeCom (企业微信);
- a PuTTY key file's private lines (after `PuTTY-User-Key-File-2:`/`-3:` and `Private-Lines:`);
- private key blocks (`-----BEGIN … PRIVATE KEY-----` followed by key material,
  on the next lines (quoted with `>` too) or on the same line: pasted from JSON or a .env file with
  its newlines written as `\\n`, or flattened with spaces), and a header alone
  at the end of the text or of a code block (a key cut off);
- passwords inside URLs (`postgres://admin:…@db/app`, `redis://:…@host`);
- password-like assignments (`password=`, `passwd:`, `secret:`, `密码：`, `パスワード:`,
  `비밀번호:`, `SecretKey 是 …`) and statements (`the password is …`, `数据库的密码是 …`,
  `パスワードは … です`, `비밀번호는 …`,
  `SMTP 授权码是 …`: a mail service's code in place of its password) whose value looks like a
  real password rather than prose or a placeholder; passwords named loosely
  (`the password for the staging db is …`, `changed my password to …`, `密码 …`,
  `pw=…`) and numeric PINs after a password word (`我的银行卡密码是 837261`, not
  `密码长度 12 位`); a 40-character value in the shape of an AWS secret access
  key, named as a secret (`secret wJalr…` too) or on the line after an AWS access key id,
  is reported as one;
- high-entropy values assigned to key-like names (api_key, token, access_key,
  client_secret, 密钥 or 秘钥, 令牌 …), or stated for them (`the API key is …`); a UUID
  only under a name that ends saying it is an API key or token (Heroku's keys).

Invisible characters (zero-width space, joiners, word joiner, BOM, soft hyphen)
are ignored while matching, so a token split by them is still found, and
letters and digits in a compatibility form (full-width `ｐａｓｓｗｏｒｄ＝…`,
mathematical `𝐩𝐚𝐬𝐬`, circled) are read as the ASCII NFKC folds each to; lines,
columns and masks refer to the text as given.

It leans towards silence on ordinary text: prose in either language, sha256 or
git hashes without a key-like name, UUIDs (but see above), base64 images, public SSH keys,
placeholders (`<token>`, `${API_KEY}`, `your_api_key_here`, `xxx`, `****`,
`changeme`, AWS's documented `…EXAMPLE` key, Slack's `T00000000/B00000000/XXXX…`),
environment lookups and paths are not secrets. In a URL, a password that only
names itself (`user:password@`, `:pass@`, `:pw@`), repeats the user name
(`postgres:postgres@`, `guest:guest@`) or looks like a port is a placeholder.
A false alarm on every memory that mentions a password would teach users to
ignore the audit.

Every detector does work in proportion to the text: patterns start only where
a run of characters starts (never again inside it), what they may consider is
capped, and a claimed range is found in a byte map rather than by comparing
with every earlier match. A memory holding a 90 KB hex line costs a write, the
audit and a hook no more than any other 90 KB of text.

Nothing here ever returns a secret in full: `SecretMatch.excerpt_redacted` keeps
at most a token's public prefix (`ghp_`, `AKIA`), and `redact(text)` masks every
match. Of sage-mem it imports only `memory/json_view` (and the excerpt size from
`checks/__init__.py`), so hooks can use it cheaply.

Why one module: the token shapes, the `key = value` judging, the entropy
and word tests and the redaction are one decision, "does this look like a
secret", tuned against each other (a value a shape misses is weighed by the
judge, a word list keeps the judge off prose); split, a change to one would
not be read beside the others it shifts. Most of its length is the tables.
"""

from __future__ import annotations

import bisect
import heapq
import math
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

from ..memory.json_view import camel_dict
from . import EXCERPT_CHARS, EXCERPT_LEAD

if TYPE_CHECKING:
    from ..memory.value import Memory

MASK = "****"

LABELS: dict[str, str] = {
    "aws-access-key-id": "AWS access key id",
    "aws-session-token": "AWS session token",
    "alibaba-access-key-id": "Alibaba Cloud AccessKey id",
    "tencent-secret-id": "Tencent Cloud SecretId",
    "volcengine-access-key": "Volcengine access key",
    "github-token": "GitHub token",
    "gitlab-token": "GitLab token",
    "slack-token": "Slack token",
    "openai-key": "OpenAI API key",
    "anthropic-key": "Anthropic API key",
    "stripe-key": "Stripe key",
    "google-api-key": "Google API key",
    "jwt": "JSON Web Token",
    "bearer-token": "bearer token",
    "pypi-token": "PyPI upload token",
    "huggingface-token": "Hugging Face token",
    "npm-token": "npm token",
    "sendgrid-key": "SendGrid API key",
    "digitalocean-token": "DigitalOcean token",
    "twilio-key": "Twilio API key",
    "mailgun-key": "Mailgun API key",
    "shopify-token": "Shopify access token",
    "square-token": "Square access token",
    "atlassian-token": "Atlassian API token",
    "linear-key": "Linear API key",
    "google-oauth-secret": "Google OAuth client secret",
    "groq-key": "Groq API key",
    "replicate-token": "Replicate API token",
    "age-secret-key": "age secret key",
    "doppler-token": "Doppler token",
    "vault-token": "HashiCorp Vault token",
    "discord-token": "Discord bot token",
    "telegram-bot-token": "Telegram bot token",
    "databricks-token": "Databricks token",
    "notion-token": "Notion integration token",
    "postman-key": "Postman API key",
    "tailscale-key": "Tailscale key",
    "grafana-token": "Grafana token",
    "newrelic-key": "New Relic API key",
    "bitbucket-token": "Bitbucket app password",
    "pulumi-token": "Pulumi access token",
    "fly-token": "Fly.io token",
    "supabase-token": "Supabase access token",
    "sentry-token": "Sentry auth token",
    "mapbox-token": "Mapbox secret token",
    "vercel-token": "Vercel token",
    "facebook-token": "Facebook access token",
    "twitter-bearer-token": "Twitter/X bearer token",
    "azure-client-secret": "Azure AD client secret",
    "cloud-secret-key": "secret key of an AK/SK pair",
    "putty-private-key": "PuTTY private key",
    "encoded-private-key": "private key (base64-encoded)",
    "signed-url": "signature of a signed URL",
    "curl-credentials": "user and password on a curl command line",
    "sshpass-password": "password on an sshpass command line",
    "docker-password": "password on a docker login command line",
    "redis-password": "password on a redis-cli command line",
    "azure-storage-key": "Azure storage account key",
    "basic-auth": "HTTP basic credentials",
    "mysql-password": "MySQL password on a command line",
    "slack-webhook": "Slack webhook URL",
    "webhook-url": "webhook URL (Discord, Teams, Feishu/Lark, WeCom)",
    "private-key": "private key",
    "url-password": "password in a URL",
    "aws-secret-key": "AWS secret access key",
    "password": "password or secret",
    "api-key": "API key or token",
}
"""Every `SecretMatch.kind`, with words for messages."""


@dataclass(frozen=True)
class SecretMatch:
    """One likely secret: what kind, where (1-based line and column), and a safe excerpt.

    `last_line` is the line it ends on (a private key block spans several).
    """

    kind: str
    line: int
    column: int
    excerpt_redacted: str
    last_line: int = 0

    @property
    def lines(self) -> range:
        """The 1-based numbers of the lines the secret spans."""
        return range(self.line, max(self.line, self.last_line) + 1)

    @property
    def label(self) -> str:
        return LABELS.get(self.kind, self.kind)

    def to_dict(self) -> dict[str, object]:
        return {**camel_dict(self, "kind line column"), "excerpt": self.excerpt_redacted}


def _token(kind: str, prefix: str, random_part: str) -> tuple[str, re.Pattern[str]]:
    """A token made of a public prefix and a random part, standing alone (not inside a word)."""
    edge = r"A-Za-z0-9_\-"
    return kind, re.compile(rf"(?<![{edge}]){prefix}({random_part})(?![{edge}])")


@cache
def _token_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(kind, pattern) for each token shape; group 1 is the random part, checked for entropy
    and masked, and what precedes it may be shown.

    Compiled on first use: most text holds none of `_PREFIXES`, and a hook process
    would otherwise pay for every pattern on every prompt.
    """
    return (
        _token("aws-access-key-id", "(?:AKIA|ASIA)", "[A-Z0-9]{16}"),
        # STS's session token: base64 of a fixed binary head (`!\n\torigin_ec`, or the older
        # `\x17\n\x06er/aws`), hundreds of characters, longer than any value judged by name.
        _token("aws-session-token", "(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdzE)",
               "[A-Za-z0-9+/]{100,}={0,2}"),
        _token("alibaba-access-key-id", "LTAI", "[A-Za-z0-9]{12,20}"),
        _token("tencent-secret-id", "AKID", "[A-Za-z0-9]{32}"),
        _token("volcengine-access-key", "AKLT", "[A-Za-z0-9]{30,60}"),
        _token("github-token", "gh[pousr]_", "[A-Za-z0-9]{36,251}"),
        _token("github-token", "github_pat_", "[A-Za-z0-9_]{22,250}"),
        _token("gitlab-token", "glpat-", r"[A-Za-z0-9_\-]{20,}"),
        _token("slack-token", "(?:xox[abpre]|xapp)-", r"[0-9]+-[A-Za-z0-9\-]{8,}"),
        _token("anthropic-key", "sk-ant-(?:[a-z0-9]+-)?", r"[A-Za-z0-9_\-]{20,}"),
        _token("openai-key", "sk-(?:proj-)?", r"[A-Za-z0-9_\-]{20,}"),
        _token("stripe-key", "[sr]k_(?:live|test)_", "[A-Za-z0-9]{16,}"),
        _token("google-api-key", "AIza", r"[0-9A-Za-z_\-]{35}"),
        _token("jwt", "eyJ", r"[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"),
        _token("pypi-token", "pypi-", r"AgE[A-Za-z0-9_\-]{50,}"),
        # A random part with a digit: `hf_` and `npm_` also start names in code.
        _token("huggingface-token", "hf_", r"(?=[A-Za-z]*[0-9])[A-Za-z0-9]{30,}"),
        _token("npm-token", "npm_", r"(?=[A-Za-z]*[0-9])[A-Za-z0-9]{36}"),
        _token("sendgrid-key", r"SG\.", r"[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}"),
        _token("digitalocean-token", "do[por]_v1_", "[a-f0-9]{64}"),
        _token("twilio-key", "SK", "[0-9a-fA-F]{32}"),
        _token("mailgun-key", "key-", "(?=[a-z]*[0-9])[0-9a-z]{32}"),
        _token("shopify-token", "shp(?:at|ca|pa|ss)_", "[a-fA-F0-9]{32}"),
        _token("square-token", "sq0(?:atp|csp)-", r"[0-9A-Za-z_\-]{22,43}"),
        _token("atlassian-token", "ATATT3", r"[A-Za-z0-9_\-=]{50,}"),
        _token("linear-key", "lin_api_", "[A-Za-z0-9]{40}"),
        _token("google-oauth-secret", "GOCSPX-", r"[A-Za-z0-9_\-]{28}"),
        _token("groq-key", "gsk_", "[A-Za-z0-9]{48,}"),
        _token("replicate-token", "r8_", "(?=[A-Za-z]*[0-9])[A-Za-z0-9]{30,}"),
        _token("age-secret-key", "AGE-SECRET-KEY-1", "[0-9A-Z]{58}"),
        _token("doppler-token", r"dp\.(?:st|ct|sa|scim|audit|pt)\.", r"[A-Za-z0-9_\-.]{40,}"),
        _token("vault-token", r"hv[sb]\.", r"[A-Za-z0-9_\-]{24,}"),
        _token("databricks-token", "dapi", "[a-f0-9]{32}(?:-[0-9])?"),
        _token("notion-token", "(?:ntn_|secret_(?=[A-Za-z]*[0-9]))", "[A-Za-z0-9]{43,46}"),
        _token("postman-key", "PMAK-", "[a-f0-9]{24}-[a-f0-9]{34}"),
        _token("tailscale-key", "tskey-", r"[A-Za-z0-9]{2,8}-[A-Za-z0-9]{8,}-[A-Za-z0-9]{20,}"),
        _token("grafana-token", "(?:glsa_|glc_)", r"[A-Za-z0-9+/_]{32,400}={0,2}"),
        _token("newrelic-key", "NRAK-", "[A-Z0-9]{27}"),
        _token("bitbucket-token", "ATBB", "[A-Za-z0-9]{32,}"),
        _token("huggingface-token", "api_org_", r"(?=[A-Za-z]*[0-9])[A-Za-z0-9]{30,}"),
        _token("pulumi-token", "pul-", "[a-f0-9]{40}"),
        _token("mapbox-token", r"sk\.eyJ1I", r"[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),
        _token("vercel-token", "vc[pkia]_", "(?=[A-Za-z]*[0-9])[A-Za-z0-9]{24,}"),
        _token("fly-token", "fo1_", r"[A-Za-z0-9_\-]{40,}"),
        _token("supabase-token", "sbp_", "[a-f0-9]{40}"),
        _token("sentry-token", "(?:sntrys_eyJ|sntryu_)", r"[A-Za-z0-9+/=_]{40,}"),
        # Facebook's Graph API tokens (EAAB…, EAAG…): long, and not inside base64 (whose
        # `+/=` would otherwise be an edge), so a blob's run of letters is not one.
        ("facebook-token", re.compile(
            r"(?<![A-Za-z0-9_\-+/=])EAA([A-Za-z0-9]{90,400})(?![A-Za-z0-9_\-+/=])")),
        # Twitter/X's app-only bearer token: twenty-odd `A`s, then URL-escaped base64
        # (`%2B`, `%3D`): the escape keeps a run of zero bytes in base64 from being one.
        ("twitter-bearer-token", re.compile(
            r"(?<![A-Za-z0-9_\-+/=%])A{20,24}+([A-Za-z0-9%]{40,200})(?![A-Za-z0-9_\-+/=%])")),
        # `-----BEGIN` in base64 (a kubeconfig's `client-key-data`, a CI variable): decoded
        # by `_encoded_private_key`, a key when its header says PRIVATE KEY.
        _token("encoded-private-key", "(?=LS0tLS1CRUdJTi)", "[A-Za-z0-9+/]{60,}={0,2}"),
        # The bot's user id in base64 (`_discord_token` decodes it), then a time stamp and an
        # HMAC: the prefix is the id's first digit, so the whole token is the random part.
        _token("discord-token", "(?=M[Tjz]|N[DTjz]|O[DT])",
               r"[A-Za-z0-9]{22,26}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}"),
        # A shared access signature, an S3 or GCS presigned URL: the signature is the grant.
        _token("signed-url", "(?:sig|X-Amz-Signature|X-Goog-Signature)=",
               "[A-Za-z0-9%+/=]{30,}"),
        ("azure-storage-key", re.compile(
            r"(?<![A-Za-z0-9])(?i:accountkey|sharedaccesskey)[ \t]*=[ \t]*"
            r"([A-Za-z0-9+/]{40,}={0,2})(?![A-Za-z0-9+/])")),
        ("bearer-token", re.compile(r"(?i:\bbearer)[ \t]+([A-Za-z0-9._~+/\-]{20,}=*)")),
        ("basic-auth", re.compile(
            r"(?i:\bauthorization)[\"']?[ \t]*[:=][ \t]*[\"']?(?i:basic)[ \t]+"
            r"([A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])")),
        # `mysql -u root -pS3cret db`: the password glued to -p (a space after -p asks for it).
        ("mysql-password", re.compile(
            r"\bmysql(?:dump|admin|import|show|check|sh)?\b[^\n]{0,200}?[ \t]-p"
            r"(\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|[^\s\"'`;|&]+)")),
        # `curl -u deploy:S3cret https://…`: `user:password` after -u or --user.
        ("curl-credentials", re.compile(
            r"\bcurl\b[^\n]{0,200}?[ \t](?:-u|--user)(?:[ \t]++|=)?"
            r"(\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|[^\s\"'`;|&]+)")),
        # `sshpass -p 'S3cret' ssh host`: the password after -p, glued or not.
        ("sshpass-password", re.compile(
            r"\bsshpass\b[^\n]{0,200}?[ \t]-p[ \t]*+"
            r"(\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|[^\s\"'`;|&]+)")),
        # `docker login -u me -p S3cret registry`: -p is a password only after `login`
        # (`docker run -p 8080:80` is a port); `--password S3cret` is a named password.
        ("docker-password", re.compile(
            r"\bdocker\b[^\n;|&]{0,200}?[ \t]login\b[^\n;|&]{0,200}?[ \t]-p(?:[ \t]++|=)?"
            r"(\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|[^\s\"'`;|&]+)")),
        # `redis-cli -a S3cret ping`, `redis-cli --pass S3cret`: the password given to the CLI.
        # (Neither reaches past `;`, `|` or `&` into the next command: `docker run -p 80:80`.)
        ("redis-password", re.compile(
            r"\bredis-cli\b[^\n;|&]{0,200}?[ \t](?:-a|--pass)(?:[ \t]++|=)"
            r"(\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|[^\s\"'`;|&]+)")),
    )


# One scan for the prefixes above; each pattern is then tried only where one starts.
# Every alternative starts with one literal character (a case-insensitive word once for
# each character `re.IGNORECASE` takes for its first: a, A; s, S, ſ), and the prefixes
# sharing a first character are one alternative, so that the scan skips in C every place
# no alternative can start and tries each place once: 3.6 times as fast on prose as one
# case-insensitive group, the same matches in the same order (`tests/test_credentials.py`).
_PREFIXES = re.compile(
    r"A(?:KIA|SIA|KID|KLT|Iza|(?i:ccountkey)|(?i:uthorization)|TATT3|TBB|GE-SECRET-KEY-1"
    r"|A{19})"
    r"|g(?:h[pousr]_|ithub_pat_|lpat-|sk_|lsa_|lc_)|x(?:ox[abpre]-|app-)"
    r"|s(?:k-|k_(?:live|test)_|(?i:haredaccesskey)|shpass|hp|q0|ig=|ecret_|bp_|ntry[su]_|k\.eyJ1I)"
    r"|r(?:k_(?:live|test)_|8_|edis-cli)|eyJ|p(?:ypi-AgE|ul-)"
    r"|B[Ee][Aa][Rr][Ee][Rr]|b[Ee][Aa][Rr][Ee][Rr]"
    r"|h(?:f_|v[sb]\.)|n(?:pm_|tn_)|S(?:G\.|(?i:haredaccesskey)|K)|d(?:o[por]_v1_|ocker|p\.|api)"
    r"|a(?:(?i:ccountkey)|(?i:uthorization)|pi_org_)|\u017f(?i:haredaccesskey)|mysql|curl|key-"
    r"|lin_api_|GOCSPX-|M[Tjz]|N(?:[DTjz]|RAK-)|O[DT]|X-(?:Amz|Goog)-Signature="
    r"|IQoJb3JpZ2luX2Vj|FwoGZXIvYXdzE|L(?:TAI|S0tLS1CRUdJTi)|PMAK-|tskey-|fo1_|vc[pkia]_"
    r"|EAA"
)
_PRIVATE_KEY = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY(?: BLOCK)?-----")
# (A quoted block's lines start with `>` marks: `> MIIEpA…`.)
_KEY_MATERIAL = re.compile(
    r"^[\s>]*(?:[A-Za-z0-9+/=]{16,}|Proc-Type:|DEK-Info:|Version:|Comment:)")
# Key material on the header's own line: after spaces or escaped newlines (`\n`,
# `\\n` in JSON within JSON), up to the next `-----` (the END line, or another header).
_INLINE_KEY = re.compile(
    r"(?:[ \t]|\\{1,2}[rn])++(?=[A-Za-z0-9+/=]{16}|Proc-Type:)"
    r"(?:[A-Za-z0-9+/=:,. \t]|\\{1,2}[rn]|-(?!----))*+"
)
# `123456789:AA…`: the bot's id, then its secret (always starting AA), found from `:AA`.
_TELEGRAM_BOT_TOKEN = re.compile(r"(?<![\w\-])[0-9]{8,10}:(AA[A-Za-z0-9_\-]{33})(?![\w\-])")
_SLACK_WEBHOOK = re.compile(
    r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9_\-]++(?:/[A-Za-z0-9_\-]++)++)"
)
# Other services' incoming webhooks: whoever has the URL posts as the bot. Group 1 is the
# secret part (after the host's fixed path). Looked for only where `webhook` or `/hook/` is.
_WEBHOOK = re.compile(
    r"(?:discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/([A-Za-z0-9_\-]{60,})"
    r"|open\.(?:feishu\.cn|larksuite\.com)/open-apis/bot/v2/hook/([0-9a-fA-F\-]{32,36})"
    r"|qyapi\.weixin\.qq\.com/cgi-bin/webhook/send\?key=([0-9a-fA-F\-]{32,36})"
    r"|\.webhook\.office\.com/webhookb2/([A-Za-z0-9@/\-]{60,}))(?![A-Za-z0-9_\-])"
)
# After `://`: the authority, up to where a path, query or fragment begins. Capped:
# a real one is short, and each `://` then costs at most this much.
_URL_AUTHORITY = re.compile(r"://(?<=[A-Za-z0-9]://)([^\s/?#\\\"'<>`]{1,512})")
_URL_PLACEHOLDERS = frozenset({
    "password", "passwd", "pass", "pwd", "pw", "pswd", "secret", "token", "key", "user",
    "username", "login", "test", "demo", "foo", "bar", "baz", "qux",
})

MAX_VALUE_CHARS = 512
"""The longest value judged (no key or password is longer, `_looks_like_key`): an unquoted
value is read one character further, and one that long is no secret. Read uncapped, each
operator of `密码：密码：…` read on to the end of the text: quadratic."""
# `name: value`, `name=value`, `"name": "value"`, `名字：值`: the value is one
# token (quoted or not), so a sentence after a colon is never taken for a value.
# It is found from its operator, which is rare and cheap to find; the name is the
# whole run of name characters before it, read on the reversed text so that no
# search restarts inside a long run (a name free to start anywhere in one made
# the scan quadratic). A quoted value is capped: no password or key is longer.
_OPERATOR = re.compile(r""":=|=>|=|：|:(?=[ \t"'])""")
# `SecretKey 是 X`: a name in Latin letters, then the Chinese "is" (是, 为) as its operator.
# Its own scan, only over text holding one: Chinese prose is full of 是, English has none.
_CHINESE_IS = re.compile(
    r"[是为為](?<=[A-Za-z0-9_.\-][是为為])|[是为為](?<=[A-Za-z0-9_.\-][ \t][是为為])")
_NAME_BEFORE = re.compile(r"""[ \t]*+["']?([\w.\-]++)""")
_LATIN_NAME_BEFORE = re.compile(r"""[ \t]*+["']?([A-Za-z0-9_.\-]++)""")
_VALUE_AFTER = re.compile(
    r"""[ \t]*+(?P<value>"[^"\n]{0,512}"|'[^'\n]{0,512}'|`[^`\n]{0,512}`"""
    r"""|[^\s"'`,;，；。、）)\]}>:=]{1,""" + str(MAX_VALUE_CHARS + 1) + r"""}+=*+)"""
)
# Every name `_is_password_name` or `_is_key_name` accepts holds one of these (read
# backwards, on the reversed text), so most names cost one small search.
_REVERSED_NAME_HINT = re.compile(
    "(?i:ssap|dwp|wp|nip|terces|nekot|yek|laitnederc|htua|reraeb)|码密|碼密|令口|钥密|钥秘|牌令|钥私|证凭"
    "|码权授|碼權授|ドーワスパ|号番証暗|호번밀비|호암"
)
NAME_CHARS = 200
"""The longest name of a `name: value` considered: a longer run is data, not a name."""
# `the password is X`, `数据库的密码是 X`: a statement, where a sentence has no colon.
# Two patterns: as one case-insensitive pattern it tried every position and cost four
# times as much. Each English name starts with a literal character (`re.IGNORECASE`
# takes only p, P for p; a, A for a; t, T for t; and s, S, the letters the look-ahead
# first written here let through) and then looks behind for the `\b` before it
# (`(?<!\w.)`: no word character before the one just read), so that the scan skips in C
# every place none starts; `tests/test_credentials.py` holds it, and the loose one, to
# their plain spelling.
_STATEMENT_VALUE = r"""(?P<value>"[^"\n]{1,200}"|'[^'\n]{1,200}'|`[^`\n]{1,200}`|[!-~]++)"""
_STATEMENTS = (
    re.compile(
        r"""(?P<name>p(?<!\w.)(?i:asswords?|asswd|assphrase)|P(?<!\w.)(?i:asswords?|asswd|assphrase)"""
        r"""|s(?<!\w.)(?i:ecret(?:[ \t]++access)?(?:[ \t]++key)?)"""
        r"""|S(?<!\w.)(?i:ecret(?:[ \t]++access)?(?:[ \t]++key)?)"""
        r"""|a(?<!\w.)(?i:pi[ \t_\-]?key|ccess[ \t]++key)"""
        r"""|A(?<!\w.)(?i:pi[ \t_\-]?key|ccess[ \t]++key)"""
        r"""|t(?<!\w.)(?i:oken)|T(?<!\w.)(?i:oken))"""
        r"""[ \t]++(?:is|was)(?:[ \t]*+[:：])?[ \t]++""" + _STATEMENT_VALUE
    ),
    re.compile(
        r"""(?P<name>密[码碼]|口令|[密秘]钥|令牌|授[权權][码碼])[ \t]*+(?:是|为|為)"""
        r"""(?:[ \t]*+[:：])?[ \t]*+"""
        + _STATEMENT_VALUE
    ),
    # `パスワードは hunter2xyz です`, `비밀번호는 …`: the topic particle (は, が; 는, 은) is
    # the "is"; a CJK value is prose (`_STATEMENT_VALUE` is ASCII).
    re.compile(
        r"""(?P<name>パスワード|暗証番号|비밀번호)[ \t]*+(?:は|が|는|은)(?:[ \t]*+[:：])?[ \t]*+"""
        + _STATEMENT_VALUE
    ),
)
# `the wifi password here is X`, `the password is still X`: a word of place or time
# beside the verb changes nothing about what follows it.
_ADVERB = (r"(?i:here|there|now|still|currently|today|also|too|then|again|actually"
           r"|probably|usually|always|just|finally|apparently|meanwhile)")
# A password named more loosely, in sentences: `the password for the staging db is X`
# (a preposition and at most five words between the name and is/was or a colon),
# `changed my password to X`, `密码改成了 X`, `门禁密码改为 4821`, or the value right
# after the name: `password X`, `pw X`, `PIN 4821`, `密码 X`, `服务器口令X`. The value is
# judged as a stated one is (`_judge_value`, `prose`): `reset your password at the login
# page`, `pw reset`, `the password manager I use is 1Password` give none. Each attempt
# starts at a name and reads at most five capped words, so the scan stays linear.
_LOOSE_STATEMENTS = (
    re.compile(
        r"""(?P<name>p(?<!\w.)(?i:asswords?|asswd|assphrase|asscode|wd?|in[ \t]?code)"""
        r"""|P(?<!\w.)(?:(?i:asswords?|asswd|assphrase|asscode|wd?|in[ \t]?code)|IN))\b"""
        r"""(?:(?:[ \t]++(?i:for|of|to|on|at|in|from|with)(?:[ \t]++[\w\-.@/']{1,40}+)"""
        r"""{1,5}?|[ \t]*+\([^()\n]{1,40}+\))?(?:(?:[ \t]++""" + _ADVERB + r""")?"""
        r"""[ \t]++(?i:is|was)(?:[ \t]++""" + _ADVERB + r""")?(?:[ \t]*+[:：])?[ \t]++"""
        r"""|[ \t]*+(?:[:：=—–→]|->)[ \t]*+|[ \t]*+(?:是|为|為)[ \t]*+)"""
        r"""|[ \t]++(?i:to)[ \t]++|[ \t]++)""" + _STATEMENT_VALUE
    ),
    re.compile(
        # `p(?i:in)|P(?i:in)`, not `(?i:pin)`: a literal first character lets the scan skip
        # in C every place none starts (re.IGNORECASE takes only p and P for p).
        r"""(?P<name>密[码碼]|口令|p(?i:in)[码碼]|P(?i:in)[码碼]|[密秘]钥|授[权權][码碼])"""
        r"""(?:[ \t]*+[都也还還就]?(?:是|为|為"""
        r"""|[改设設][成为為]了?|設置為|设置为"""
        r"""|[换換变變]成了?))?(?:[ \t]*+[:：=])?[ \t]*+"""
        + _STATEMENT_VALUE
    ),
)
_STATEMENT_KEY_WORDS = ("key", "token", "密钥", "秘钥", "令牌")
# A name whose last word is a password's (not `max_password_length`): its value may be a
# numeric PIN (`我的银行卡密码是 837261`, `PIN: 4821`, `db_password=837261`).
_PIN_NAME = re.compile(
    r"(?i:(?<![a-z])(?:passwords?|passwd|passcode|pwd?|pass|pin(?:[ \t_\-]?code)?)"
    r"|密[码碼]|口令|pin[码碼])$"
)
_PIN = re.compile(r"[0-9]{4,12}")
# The 授权码 (authorisation code) QQ Mail, 163 and other mail services give for SMTP and IMAP
# in place of the password: sixteen lower-case letters, a word to nothing else.
_AUTH_CODE = re.compile(r"[a-z]{16}")
# `密码长度 12 位`, `the PIN is 4 digits`, `密码 2024 年改过`: a count or a date, not a PIN.
_UNIT_AFTER = re.compile(
    r"[ \t]*+(?:位|个|個|字|年|月|日|号|號|天|次|分|秒|小时|%"
    r"|(?i:char|digit|letter|number|symbol|year|day|month|week|time|minute|hour|second|bit|byte))"
)
_AWS_SECRET = re.compile(r"^[A-Za-z0-9/+]{40}$")
_PASSWORD_WORDS = (
    "password", "passwd", "passphrase", "passcode", "secret", "密码", "密碼", "口令",
    "授权码", "授權碼", "パスワード", "暗証番号", "비밀번호", "암호",
)
_PASSWORD_SEGMENTS = frozenset({"pwd", "pass", "pw", "pin"})
_KEY_WORDS = (
    "token", "apikey", "api_key", "api-key", "accesskey", "access_key", "access-key",
    "privatekey", "private_key", "credential", "密钥", "秘钥", "令牌", "私钥", "凭证",
)
_KEY_SEGMENTS = frozenset({"key", "auth", "authorization", "bearer"})

_PLACEHOLDER_WORDS = (
    "example", "your", "xxx", "placeholder", "redacted", "dummy", "changeme", "change_me",
    "sample", "todo", "fixme", "insert", "replace", "mock", "<", ">", "${", "{{", "%(", "*", "…",
    "...",
)
_PLAIN_WORDS = frozenset({
    "none", "null", "nil", "true", "false", "yes", "no", "required", "optional", "hidden",
    "unset", "empty", "secret", "password", "token", "env", "string", "str", "default",
})
# Some services' keys are UUIDs (Heroku's): under a name that ends saying so, one is a key.
_API_KEY_NAME = re.compile(r"(?:api|auth|access)[_\-.]?(?:key|token)$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_WORDS_JOINED = re.compile(r"^_*[^\W\d_]+(?:[_\-.]+[^\W\d_]+)*_*$")
_DOTTED_NAME = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
_SNAKE_CASE = re.compile(r"^_*[a-z][a-z0-9]*(?:_+[a-z0-9]+)+_*$")
_TITLE_WORD = re.compile(r"[A-Z][a-z]{2,}")
_TOKEN_CHARS = re.compile(r"^[A-Za-z0-9+/=_\-.~]+$")
# Compiled by `re.search` the first time a password is weighed: building this
# set of ~30,000 characters costs 2 ms, which most hook processes need not pay.
_CJK = r"[\u3000-\u30ff\u3400-\u9fff\uac00-\ud7af\uff00-\uffef]"


def find_secrets(text: str) -> list[SecretMatch]:
    """Every likely secret in `text`, in order of line and column (lines split on LF only)."""
    spans = _spans(text)
    if not spans:
        return []
    starts = [0, *(newline.end() for newline in re.finditer("\n", text))]
    by_line: dict[int, list[tuple[int, int, int, str]]] = {}
    last_lines: dict[tuple[int, int], int] = {}
    for start, end, kind, keep in spans:
        index = bisect.bisect_right(starts, start) - 1
        offset = starts[index]
        by_line.setdefault(index, []).append((start - offset, end - offset, keep, kind))
        if kind == "private-key":  # the header is the span; the block runs to its END line
            block = _KEY_BLOCK.match(text, start)
            end = block.end() if block else end
        last_lines[index, start - offset] = bisect.bisect_right(starts, max(start, end - 1))
    matches = []
    for index in sorted(by_line):
        stop = starts[index + 1] - 1 if index + 1 < len(starts) else len(text)
        line = text[starts[index] : stop].removesuffix("\r")
        located = sorted(by_line[index])
        # One mask per line, however many secrets it holds: masking it again for
        # each one would cost its length times their number.
        masked, anchors = _mask(line, [(start, end, keep) for start, end, keep, _ in located])
        lead = len(masked) - len(masked.lstrip())
        stripped = masked.strip()
        for (column, _end, _keep, kind), anchor in zip(located, anchors, strict=True):
            excerpt = _excerpt(stripped, max(0, anchor - lead))
            matches.append(SecretMatch(kind, index + 1, column + 1, excerpt,
                                       last_lines[index, column]))
    return matches


def has_secrets(text: str) -> bool:
    """True when `text` holds anything `find_secrets` would report."""
    return bool(_spans(text))


def redact(text: str) -> str:
    """`text` with every likely secret masked (public prefixes kept); all else unchanged.

    A private key keeps its BEGIN and END lines, and each line of key
    material between them becomes MASK: the text keeps its lines (so do a PuTTY key's
    private lines, each masked on its own).
    """
    spans = _spans(text)
    if not spans:
        return text
    pieces = []
    for start, end, kind, keep in spans:
        if kind == "putty-private-key":
            pieces += [(*line.span(), 0) for line in _NOT_BLANK.finditer(text, start, end)]
        else:
            pieces.append((start, end, keep))
    masked = _mask(text, pieces)[0]
    if any(kind == "private-key" for _start, _end, kind, _keep in spans):
        masked = _KEY_BLOCK.sub(_masked_key_block, masked)
    return masked


def shown_secrets(memory: Memory) -> bool:
    """Whether a hook would mask anything in what it shows of `memory`: its id (as a name),
    its category, its description or its body as shown (`value.shown_body`).

    The flag the index cache keeps for each memory (`search/cache.py`, "secrets"): a hook
    showing only memories the cache holds clean, their files unchanged since, never
    compiles these patterns (`agents/context.render_memory`). A category is checked even
    when it is one of the four, which shows nothing more: the flag errs towards masking.
    """
    from ..memory.value import shown_body

    return bool(
        _name_spans(memory.id)
        or (memory.category and _category_secrets(memory.category))
        or _spans(memory.description)
        or _spans(shown_body(memory.body))
    )


@lru_cache(maxsize=256)
def _category_secrets(category: str) -> bool:
    """`_spans(category)`, remembered: a folder's memories share a few categories, and a
    build judges each memory (`shown_secrets`)."""
    return bool(_spans(category))


def decoded_secrets(text: str, meta: Mapping[str, Any]) -> list[tuple[str, SecretMatch]]:
    """Secrets in the frontmatter values `meta` (as YAML read them from `text`) that the text
    does not show: spelled with escapes (`"\\x67hp_…"`), which every reader decodes.

    (key, match) for each; a value found as it is in `text` is `find_secrets`' to report.
    """
    found: list[tuple[str, SecretMatch]] = []
    if "\\" not in text:  # only an escape makes YAML read what the text does not show
        return found
    for key, value in meta.items():
        for piece in _strings(value):
            matches = find_secrets(piece)
            if matches and piece not in text:  # as written, the text's own scan sees it
                found.extend((str(key), match) for match in matches)
    return found


def _strings(value: Any, depth: int = 0) -> Iterator[str]:
    """Every string in a frontmatter value (lists and mappings walked, not too deep)."""
    if isinstance(value, str):
        yield value
    elif depth < 8 and isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item, depth + 1)
    elif depth < 8 and isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(key, depth + 1)
            yield from _strings(item, depth + 1)


# In a name (a memory id, a file's path) words are joined by these, which the text's
# detectors take for part of a token: `reference_ghp_…` holds a token all the same.
_NAME_JOINS = re.compile(r"[_\-/.]")
# How many joins of one name are looked behind (an id has at most 200 characters).
_MAX_NAME_JOINS = 64


def _name_spans(name: str) -> list[tuple[int, int, str, int]]:
    """`_spans` of a name, also of each part that starts after a join, in the name's offsets."""
    found: list[tuple[int, int, str, int]] = []
    if not _may_hold_secrets(name if name.isascii() else _folded(name)):
        return found  # nor does any part of it: most ids are judged by this one scan
    taken = bytearray(len(name))
    starts = [0, *(join.end() for join in _NAME_JOINS.finditer(name, 0, len(name) - 1))]
    for start in starts[: _MAX_NAME_JOINS + 1]:
        for first, last, kind, keep in _spans(name[start:]):
            first, last = first + start, last + start
            if taken.find(1, first, last) < 0:
                taken[first:last] = b"\x01" * (last - first)
                found.append((first, last, kind, keep))
    return sorted(found)


def find_secrets_in_name(name: str) -> list[SecretMatch]:
    """`find_secrets` for a name: a token joined to words by `_`, `-`, `/` or `.` counts too."""
    spans = _name_spans(name)
    masked, anchors = _mask(name, [(start, end, keep) for start, end, _kind, keep in spans])
    return [
        SecretMatch(kind, 1, start + 1, _excerpt(masked, anchor))
        for (start, _end, kind, _keep), anchor in zip(spans, anchors, strict=True)
    ]


def redact_name(name: str) -> str:
    """`name` with every likely secret `find_secrets_in_name` finds masked."""
    spans = _name_spans(name)
    if not spans:
        return name
    return _mask(name, [(start, end, keep) for start, end, _kind, keep in spans])[0]


# A key on its header's line is masked already (MASK right after the header): not a block.
_KEY_BLOCK = re.compile(
    r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)(?!\*\*\*\*)(.*?)"
    r"(-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)


def _masked_key_block(match: re.Match[str]) -> str:
    lines = match.group(2).split("\n")
    if len(lines) == 1:
        return match.group(0)
    # The first piece is the rest of the BEGIN line, the last the start of the END line
    # (with no END line, key material to the end of the text).
    ended = bool(match.group(3))
    inner = lines[1:-1] if ended else lines[1:]
    masked = [MASK if line.strip() else line for line in inner]
    tail = [lines[-1]] if ended else []
    return match.group(1) + "\n".join([lines[0], *masked, *tail]) + match.group(3)


# Characters that show nothing: a token split by them still works when pasted.
_INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200d\u2060-\u2064\ufeff]")
# Letters and digits written in a compatibility form (full-width `ｐａｓｓ`, mathematical
# `𝐩𝐚𝐬𝐬`, circled, `ſ`, `K`…) and `＝ ＿ －`: read as the one ASCII character NFKC folds
# each to, so positions stay. What NFKC folds to punctuation (`：`, `，`, `（`, with which
# CJK sentences are written) or to several characters (`ﬁ`, `㎏`) is read as it is: the
# rules read `密码：` as an operator and `，` as the end of a value. These are the
# characters (Unicode 14, Python 3.11's) NFKC folds to one ASCII letter, digit or `=_-`;
# `tests/test_secret_shapes.py` works them out again. A text holding none costs one scan.
_COMPATIBLE_BMP = (
    "\u00aa\u00b2\u00b3\u00b9\u00ba\u017f\u02b0\u02b2\u02b3\u02b7\u02b8\u02e1-\u02e3\u1d2c\u1d2e"
    "\u1d30\u1d31\u1d33-\u1d3a\u1d3c\u1d3e-\u1d43\u1d47-\u1d49\u1d4d\u1d4f\u1d50\u1d52"
    "\u1d56-\u1d58\u1d5b\u1d62-\u1d65\u1d9c\u1da0\u1dbb\u2070\u2071\u2074-\u2079\u207c"
    "\u207f-\u2089\u208c\u2090-\u2093\u2095-\u209c\u2102\u210a-\u210e\u2110-\u2113\u2115"
    "\u2119-\u211d\u2124\u2128\u212a\u212c\u212d\u212f-\u2131\u2133\u2134\u2139\u2145-\u2149"
    "\u2160\u2164\u2169\u216c-\u2170\u2174\u2179\u217c-\u217f\u2460-\u2468\u24b6-\u24ea"
    "\u2c7c\u2c7d\ua7f2-\ua7f4\ufe33\ufe34\ufe4d-\ufe4f\ufe63\ufe66\uff0d\uff10-\uff19\uff1d"
    "\uff21-\uff3a\uff3f\uff41-\uff5a"
)
# (Apart: a class with them is scanned many times slower; `_FOLDED` takes every character
# past U+FFFF, one range, and a text holding one is then searched for them.)
_COMPATIBLE_ASTRAL = (
    "\U000107a5\U0001d400-\U0001d454\U0001d456-\U0001d49c\U0001d49e\U0001d49f\U0001d4a2"
    "\U0001d4a5\U0001d4a6\U0001d4a9-\U0001d4ac\U0001d4ae-\U0001d4b9\U0001d4bb"
    "\U0001d4bd-\U0001d4c3\U0001d4c5-\U0001d505\U0001d507-\U0001d50a\U0001d50d-\U0001d514"
    "\U0001d516-\U0001d51c\U0001d51e-\U0001d539\U0001d53b-\U0001d53e\U0001d540-\U0001d544"
    "\U0001d546\U0001d54a-\U0001d550\U0001d552-\U0001d6a3\U0001d7ce-\U0001d7ff"
    "\U0001f12b\U0001f12c\U0001f130-\U0001f149\U0001fbf0-\U0001fbf9"
)
_COMPATIBLE_CHARACTER = re.compile(f"[{_COMPATIBLE_BMP}{_COMPATIBLE_ASTRAL}]")
# What `_folded` may change: an invisible character, a compatibility one, or (a few of)
# those past U+FFFF.
_FOLDED = re.compile(
    f"[\u00ad\u180e\u200b-\u200d\u2060-\u2064\ufeff{_COMPATIBLE_BMP}"
    "\U00010000-\U0010ffff]")


@lru_cache(maxsize=2048)
def _ascii_form(char: str) -> str:
    """The ASCII letter, digit or `=_-` NFKC folds `char` to, or "" (it folds to none)."""
    import unicodedata

    folded = unicodedata.normalize("NFKC", char)
    keep = len(folded) == 1 and folded.isascii() and (folded.isalnum() or folded in "=_-")
    return folded if keep else ""


def _fold_table(text: str) -> dict[int, str]:
    """For each compatibility character of `text`, the ASCII it reads as."""
    return {ord(char): form for char in set(_COMPATIBLE_CHARACTER.findall(text))
            if (form := _ascii_form(char))}


def _folded(text: str) -> str:
    """`text` as matched: without invisible characters, compatibility letters read as ASCII."""
    return _INVISIBLE.sub("", text).translate(_fold_table(text))


def _spans(text: str) -> list[tuple[int, int, str, int]]:
    """(start, end, kind, characters that may be shown) for each likely secret in `text`.

    Matching runs on the text without invisible characters, compatibility letters read
    as ASCII (`_fold_table`); each span is then carried back to the text as given, invisible
    characters inside it included.
    """
    if text.isascii():  # (known without a scan) holds none of the invisible characters
        return _visible_spans(text)
    if _FOLDED.search(text) is None:
        return _visible_spans(text)
    table = _fold_table(text)
    removed = [found.start() for found in _INVISIBLE.finditer(text)]
    if not removed:
        return _visible_spans(text.translate(table) if table else text)
    # The n-th removed character sat just before visible position removed[n] - n.
    before = [position - n for n, position in enumerate(removed)]

    def original(position: int) -> int:
        return position + bisect.bisect_right(before, position)

    spans = []
    for start, end, kind, keep in _visible_spans(_INVISIBLE.sub("", text).translate(table)):
        first, last = original(start), original(end - 1) + 1
        shown = original(start + keep) - first if keep < end - start else last - first
        spans.append((first, last, kind, shown))
    return spans


class _Claims:
    """Ranges of the text already reported, so that a later detector skips them.

    A byte per character: checking a range costs its length, never the number
    of ranges claimed before (which made a text full of matches quadratic).
    """

    def __init__(self, size: int) -> None:
        self._taken = bytearray(size)
        self.spans: list[tuple[int, int, str, int]] = []

    def free(self, start: int, end: int) -> bool:
        return self._taken.find(1, start, end) < 0

    def claim(self, start: int, end: int, kind: str, keep: int) -> None:
        self._taken[start:end] = b"\x01" * (end - start)
        self.spans.append((start, end, kind, keep))


# What a detector cannot match without: each is looked for once, and a detector runs only
# on a text that holds its own (a skipped one would have found nothing, so the claims
# are the same). Every name an English statement, loose or not, starts with holds one of
# these (`re.IGNORECASE` takes p, P for p; k, K, U+212A for k; s, S, U+017F for s; t,
# T for t), spelled with a literal first character so that the scan skips in C every
# place none starts.
_ENGLISH_NAMES = re.compile(
    r"p(?i:ass|w|in)|P(?i:ass|w|in)|s(?i:ecret)|S(?i:ecret)|\u017f(?i:ecret)"
    r"|k(?i:ey)|K(?i:ey)|\u212a(?i:ey)|t(?i:oken)|T(?i:oken)"
)
# Every Chinese statement's name holds one of these (`pin码`: 码), and every Japanese or
# Korean password's name (assignments only: `パスワード: …`, `비밀번호: …`) one of the last four.
_CHINESE_NAMES = ("密", "秘钥", "口令", "令牌", "码", "碼", "パスワード", "暗証番号", "비밀번호",
                  "암호")
# The rest of `_REVERSED_NAME_HINT`'s words, forwards: an assignment's name holds one of
# these, of `_ENGLISH_NAMES` or of `_CHINESE_NAMES`.
_OTHER_KEY_NAMES = re.compile(
    r"a(?i:uth)|A(?i:uth)|b(?i:earer)|B(?i:earer)|c(?i:redential)|C(?i:redential)|私钥|凭证"
)


def _visible_spans(text: str) -> list[tuple[int, int, str, int]]:
    claims = _Claims(len(text))
    _find_tokens(text, claims)
    _find_aws_secret_beside_its_id(text, claims)
    if "Q~" in text:
        _find_azure_client_secrets(text, claims)
    if "PuTTY-User-Key-File-" in text:
        _find_putty_keys(text, claims)
    if "SK" in text and "AK" in text:
        _find_ak_sk_pairs(text, claims)
    if "-----BEGIN " in text:
        _find_key_blocks(text, claims)
    _find_webhooks(text, claims)
    _find_bot_tokens(text, claims)
    _find_url_passwords(text, claims)
    english = _ENGLISH_NAMES.search(text) is not None
    chinese = any(word in text for word in _CHINESE_NAMES)
    latin = english or _OTHER_KEY_NAMES.search(text) is not None
    if english and ("ecret" in text or "ECRET" in text):
        _find_named_aws_secrets(text, claims)
    if latin or chinese:
        _find_assignments(text, claims, latin_names=latin)
    if english or chinese:
        _find_statements(text, claims, _STATEMENTS if english and chinese
                         else _STATEMENTS[:1] if english else _STATEMENTS[1:])
        _find_statements(text, claims, _LOOSE_STATEMENTS if english and chinese
                         else _LOOSE_STATEMENTS[:1] if english else _LOOSE_STATEMENTS[1:])
    if "-----BEGIN " in text:
        _find_inline_keys(text, claims)
    return claims.spans


# A 40-character run of an AWS secret access key's characters, not inside a longer one.
_AWS_SECRET_RUN = re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")


def _find_aws_secret_beside_its_id(text: str, claims: _Claims) -> None:
    """After an AWS access key id, on its line: a value in the shape of its secret access
    key is one, named or not (`AKIA… / wJalr…`, `… with secret wJalr…`)."""
    for _start, end, kind, _keep in list(claims.spans):
        if kind != "aws-access-key-id":
            continue
        stop = text.find("\n", end)
        line_end = len(text) if stop < 0 else stop
        for run in _AWS_SECRET_RUN.finditer(text, end, min(line_end, end + 200)):
            if _looks_like_aws_secret(run.group()) and claims.free(*run.span()):
                claims.claim(run.start(), run.end(), "aws-secret-key", 0)


# `secret wJalr…`, `the secret key is wJalr…`: an AWS secret access key's shape after the word.
# (`secret: …` and `secret key = …` are assignments, judged by `_judge_value` the same way.)
# The word in lower, capitalised or upper case only: `_visible_spans` runs this where
# `ecret` or `ECRET` is.
# So is the CLI's own name for it, `aws configure set aws_secret_access_key wJalr…`.
_NAMED_AWS_SECRET = re.compile(
    r"[sS](?<![A-Za-z0-9].)(?:(?<=[aA][wW][sS]_.)|(?<!_.))(?:ecret|ECRET)"
    r"(?:[ \t_]++(?i:access))?(?:[ \t_]++(?i:key))?"
    r"(?:[ \t]++(?i:is|was))?[ \t]++([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)


def _find_named_aws_secrets(text: str, claims: _Claims) -> None:
    for match in _NAMED_AWS_SECRET.finditer(text):
        if _looks_like_aws_secret(match.group(1)) and claims.free(*match.span(1)):
            claims.claim(match.start(1), match.end(1), "aws-secret-key", 0)


# Azure AD (Entra) client secrets: three characters, a digit and `Q~`, then 31 to 34 more.
_AZURE_CLIENT_SECRET = re.compile(
    r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.\-]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])"
)


def _find_azure_client_secrets(text: str, claims: _Claims) -> None:
    """Tried only where `Q~` is: four characters before it."""
    position = text.find("Q~", 4)
    while position >= 0:
        match = _AZURE_CLIENT_SECRET.match(text, position - 4)
        if match is not None:
            secret = match.group()
            if (claims.free(*match.span()) and not _looks_like_placeholder(secret)
                    and any(c.isalpha() for c in secret[6:])
                    and any(c.isdigit() for c in secret[6:])
                    and _looks_random(secret, minimum=3.5)):
                claims.claim(match.start(), match.end(), "azure-client-secret", 0)
        position = text.find("Q~", position + 2)


# A PuTTY key file: its header, a few lines (`Encryption:`, `Comment:`, the public lines,
# v3's Argon2 settings), then `Private-Lines: N` and N lines of base64: those are the key.
_PUTTY_KEY = re.compile(
    r"PuTTY-User-Key-File-[23]:[^\n]*+\n(?:[^\n]*+\n){0,40}?"
    r"[ \t>]*+Private-Lines:[ \t]*+([0-9]{1,3})[ \t\r]*+\n"
)
_PUTTY_LINE = re.compile(r"[ \t>]*+([A-Za-z0-9+/=]{16,})[ \t\r]*+(?:\n|\Z)")


# A PuTTY key's private line within its span, as `redact` masks it (quote marks kept).
_NOT_BLANK = re.compile(r"[^\s>]++")


def _find_putty_keys(text: str, claims: _Claims) -> None:
    """The private lines after a PuTTY key's `Private-Lines:`, claimed as one span."""
    for key in _PUTTY_KEY.finditer(text):
        position, first, last = key.end(), -1, -1
        for _ in range(int(key.group(1))):
            line = _PUTTY_LINE.match(text, position)
            if line is None:
                break
            first = line.start(1) if first < 0 else first
            last, position = line.end(1), line.end()
        if first >= 0 and claims.free(first, last):
            claims.claim(first, last, "putty-private-key", 0)


# `AK xxx SK yyy`, `AK：…，SK：…`: the access key and secret key pair Baidu, Huawei and other
# clouds name so. The SK is the secret, claimed when an `AK` stands before it on its line.
_SK_VALUE = re.compile(
    r"(?<![A-Za-z0-9_])SK(?:[ \t]*+[:：=][ \t]*+|[ \t]++)"
    r"([A-Za-z0-9/+]{24,64})(?![A-Za-z0-9/+=_\-])"
)
_AK_WORD = re.compile(r"(?<![A-Za-z0-9_])AK(?![A-Za-z0-9_])")


def _find_ak_sk_pairs(text: str, claims: _Claims) -> None:
    for match in _SK_VALUE.finditer(text):
        line_start = max(text.rfind("\n", 0, match.start()) + 1, match.start() - 300)
        if (_AK_WORD.search(text, line_start, match.start()) is not None
                and _looks_like_key(match.group(1)) and claims.free(*match.span(1))):
            claims.claim(match.start(1), match.end(1), "cloud-secret-key", 0)


def _may_hold_secrets(text: str) -> bool:
    """False when no detector can find anything in `text` (without invisible characters)
    nor in any piece of it: none of what each needs (`_visible_spans`) is in it."""
    return (
        _PREFIXES.search(text) is not None
        or any(part in text for part in (
            "-----BEGIN ", "hooks.slack.com/", "://", ":AA", "webhook", "/hook/", "Q~",
            "PuTTY-User-Key-File-"))
        or any(word in text for word in _CHINESE_NAMES)
        or _ENGLISH_NAMES.search(text) is not None
        or _OTHER_KEY_NAMES.search(text) is not None
    )


def _find_tokens(text: str, claims: _Claims) -> None:
    """Each pattern, in order, tried only where one of `_PREFIXES` starts with its first letter."""
    starts: dict[str, list[int]] = {}
    for prefix in _PREFIXES.finditer(text):
        starts.setdefault(text[prefix.start()], []).append(prefix.start())
    for kind, regex in _token_patterns() if starts else ():
        for first in _TOKEN_FIRST_CHARACTERS[kind]:
            for position in starts.get(first, ()):
                match = regex.match(text, position)
                if match is None or not claims.free(match.start(), match.end()):
                    continue
                random_part = match.group(1)
                judge = _TOKEN_JUDGES.get(kind)
                if judge is not None:
                    if judge(random_part):
                        claims.claim(match.start(), match.end(), kind,
                                     match.start(1) - match.start())
                    continue
                if _looks_like_placeholder(random_part):
                    continue
                if not _looks_random(random_part, minimum=2.5):
                    continue
                if (_WORDS_JOINED.match(random_part) and re.search(r"[_\-.]", random_part)
                        and all(_WORD_PART.fullmatch(part) for part in _segments(random_part))):
                    continue  # sk-this-is-only-words (not AIza's random `u_llGONhZYub…`)
                claims.claim(match.start(), match.end(), kind, match.start(1) - match.start())


# A part of `sk-this-is-only-words`: a word as written (lower case, capitalised or upper case),
# not a run of letters whose case changes at random.
_WORD_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+")

_TOKEN_FIRST_CHARACTERS = {
    "aws-access-key-id": "A", "github-token": "g", "gitlab-token": "g", "slack-token": "x",
    "anthropic-key": "s", "openai-key": "s", "stripe-key": "sr", "google-api-key": "A",
    "jwt": "e", "pypi-token": "p", "bearer-token": "Bb", "huggingface-token": "ha",
    "npm-token": "n", "sendgrid-key": "S", "digitalocean-token": "d",
    "azure-storage-key": "AaSs", "basic-auth": "Aa", "mysql-password": "m",
    "curl-credentials": "c", "sshpass-password": "s", "docker-password": "d",
    "redis-password": "r", "twilio-key": "S", "mailgun-key": "k",
    "shopify-token": "s", "square-token": "s", "atlassian-token": "A", "linear-key": "l",
    "google-oauth-secret": "G", "groq-key": "g", "replicate-token": "r", "age-secret-key": "A",
    "doppler-token": "d", "vault-token": "h", "discord-token": "MNO", "signed-url": "sX",
    "aws-session-token": "IF", "alibaba-access-key-id": "L", "tencent-secret-id": "A",
    "volcengine-access-key": "A", "databricks-token": "d", "notion-token": "ns",
    "postman-key": "P", "tailscale-key": "t", "grafana-token": "g", "newrelic-key": "N",
    "bitbucket-token": "A", "pulumi-token": "p", "fly-token": "f", "supabase-token": "s",
    "sentry-token": "s", "encoded-private-key": "L",
    "mapbox-token": "s", "vercel-token": "v", "facebook-token": "E",
    "twitter-bearer-token": "A",
}
"""The letters each kind in `_token_patterns` can start with."""


def _encoded_private_key(encoded: str) -> bool:
    """Base64 whose text begins with a private key's header (`-----BEGIN … PRIVATE KEY-----`)."""
    import base64
    import binascii

    head = encoded[: len(encoded) // 4 * 4][:120]
    try:
        text = base64.b64decode(head, validate=True).decode("ascii", "replace")
    except (binascii.Error, ValueError):
        return False
    return _PRIVATE_KEY.match(text) is not None


def _basic_credentials(encoded: str) -> bool:
    """`Authorization: Basic …`: base64 of `user:password`, the password not a placeholder."""
    import base64
    import binascii

    try:
        decoded = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
        text = decoded.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    user, colon, password = text.partition(":")
    return bool(colon) and text.isprintable() and bool(password) and (
        _looks_like_url_password(password, user))


def _mysql_password(value: str) -> bool:
    """What follows `-p` on a MySQL command line: a password unless a placeholder or a lookup."""
    value = _unquote(value)
    return not value.startswith(("$", "<", "{", "%", "`")) and _looks_like_url_password(
        value, "") and (_looks_like_password(value) or len(value) >= 4 and not value.isalpha())


def _curl_credentials(value: str) -> bool:
    """What follows `curl -u`: `user:password`, the password given (not asked for) and real."""
    user, colon, password = _unquote(value).partition(":")
    return bool(colon) and _mysql_password(password) and _looks_like_url_password(password, user)


def _discord_token(token: str) -> bool:
    """A Discord bot token's first part is its bot's id (17 to 20 digits) in base64."""
    import base64
    import binascii

    encoded = token.partition(".")[0]
    try:
        decoded = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return decoded.isdigit() and 17 <= len(decoded) <= 20


def _facebook_token(token: str) -> bool:
    """Letters of both cases and digits, at random: not a word run long (`EAAAAA…`)."""
    return (any(c.isdigit() for c in token) and any(c.islower() for c in token)
            and any(c.isupper() for c in token) and not _looks_like_placeholder(token)
            and _looks_random(token, minimum=3.5))


def _twitter_bearer_token(token: str) -> bool:
    """URL-escaped base64 (a `%` and its two hex digits), random, after the `A`s."""
    return (re.search("%[0-9A-F]{2}", token) is not None and not _looks_like_placeholder(token)
            and _looks_random(token, minimum=3.5))


_TOKEN_JUDGES = {
    "basic-auth": _basic_credentials, "mysql-password": _mysql_password,
    "sshpass-password": _mysql_password, "curl-credentials": _curl_credentials,
    "docker-password": _mysql_password, "redis-password": _mysql_password,
    "discord-token": _discord_token, "encoded-private-key": _encoded_private_key,
    "facebook-token": _facebook_token, "twitter-bearer-token": _twitter_bearer_token,
}
"""The kinds whose value is judged on its own (a decoded pair, a password), not by entropy."""


def _find_key_blocks(text: str, claims: _Claims) -> None:
    """Headers of keys whose material follows on the next lines (claimed over anything), or
    that stand alone at the end of the text or of a code block: a key cut off after its
    header, whose material is pasted next or was lost (a header in a sentence, or followed
    by `<the key>` or its END line, shows a format and is not one)."""
    for key in _PRIVATE_KEY.finditer(text):
        start, end = key.span()
        if _key_material_follows(text, end) or _lone_header(text, start, end):
            # `redact` masks the material line by line (`_KEY_BLOCK`); the header is what shows.
            claims.claim(start, end, "private-key", end - start)


def _find_inline_keys(text: str, claims: _Claims) -> None:
    """Keys on their header's line, claimed last and over anything: a value that runs into
    the header is still masked by the detector that found it, and this masks the rest."""
    for key in _PRIVATE_KEY.finditer(text):
        start, end = key.span()
        if _key_material_follows(text, end):
            continue  # a block, claimed by `_find_key_blocks`
        if (inline := _INLINE_KEY.match(text, end)) is not None:
            claims.claim(start, inline.end(), "private-key", end - start)


def _find_webhooks(text: str, claims: _Claims) -> None:
    if "webhook" in text or "/hook/" in text:
        for match in _WEBHOOK.finditer(text):
            group = match.lastindex or 1
            start, end = match.span(group)
            secret = match.group(group)
            if (claims.free(start, end) and not _looks_like_placeholder(secret)
                    and _looks_random(secret, minimum=3.0)):
                claims.claim(start, end, "webhook-url", 0)
    if "hooks.slack.com/" not in text:
        return
    for match in _SLACK_WEBHOOK.finditer(text):
        start, end = match.span(1)
        path = match.group(1)
        if len(path.rsplit("/", 1)[-1]) < 16 or _looks_like_placeholder(path):
            continue
        if _looks_random(path, minimum=3.0) and claims.free(start, end):
            claims.claim(start, end, "slack-webhook", 0)


def _find_bot_tokens(text: str, claims: _Claims) -> None:
    """Telegram bot tokens: the id before the colon may show, the secret after it not."""
    if ":AA" not in text:
        return
    for match in _TELEGRAM_BOT_TOKEN.finditer(text):
        secret = match.group(1)
        if (claims.free(match.start(), match.end()) and not _looks_like_placeholder(secret[2:])
                and _looks_random(secret, minimum=3.0)):
            claims.claim(match.start(), match.end(), "telegram-bot-token",
                         match.start(1) - match.start())


def _find_url_passwords(text: str, claims: _Claims) -> None:
    """`scheme://user:password@host`: the password, unless it is a placeholder."""
    if "://" not in text:
        return
    for match in _URL_AUTHORITY.finditer(text):
        authority = match.group(1)
        at = authority.rfind("@")
        # `host1:port,user:password@host2`: several hosts, the user information is the last's
        begin = authority.rfind(",", 0, at) + 1 if at > 0 else 0
        colon = authority.find(":", begin, at)
        if at < 0 or colon < 0:
            continue
        user, password = authority[begin:colon], authority[colon + 1 : at]
        if not _looks_like_url_password(password, user):
            continue
        start = match.start(1) + colon + 1
        end = start + len(password)
        if claims.free(start, end):
            claims.claim(start, end, "url-password", 0)


def _looks_like_url_password(password: str, user: str) -> bool:
    lowered = password.lower()
    if not password or password == user or lowered in _URL_PLACEHOLDERS:
        return False
    if _is_password_name(lowered):
        return False  # `:DB_PASSWORD@`, `:mypassword@`: names the password, is not one
    if password.isdigit() and len(password) <= 5:
        return False  # host:port@, not a password
    if password.startswith(("$", "{", "[", "%(")) or "${" in password or "{{" in password:
        return False  # a template
    return not _looks_like_placeholder(password)


def _find_assignments(text: str, claims: _Claims, *, latin_names: bool = True) -> None:
    """Every `name: value`, overlapping: in `note: token=abc`, `token` is a value and a name.

    `latin_names`: whether the text may hold a name in Latin letters (`_ENGLISH_NAMES`,
    `_OTHER_KEY_NAMES`), the only kind `SecretKey 是 X` is looked for with.
    """
    reversed_text = ""
    operators: Iterator[re.Match[str]] = _OPERATOR.finditer(text)
    if latin_names and ("是" in text or "为" in text or "為" in text):
        operators = heapq.merge(operators, _CHINESE_IS.finditer(text), key=lambda m: m.start())
    for operator in operators:
        reversed_text = reversed_text or text[::-1]
        # A 是 is a word character itself: its name is read in Latin letters only, or each
        # would read back over every 是 before it (`token是token是…`: quadratic).
        before = _LATIN_NAME_BEFORE if operator.group() in "是为為" else _NAME_BEFORE
        named = before.match(reversed_text, len(text) - operator.start())
        if named is None or named.end(1) - named.start(1) > NAME_CHARS:
            continue
        if _REVERSED_NAME_HINT.search(reversed_text, named.start(1), named.end(1)) is None:
            continue
        name = named.group(1)[::-1].lower()
        password_name = _is_password_name(name)
        if not password_name and not _is_key_name(name):
            continue
        value = _VALUE_AFTER.match(text, operator.end())
        if value is not None and len(value.group("value").rstrip("=")) <= MAX_VALUE_CHARS:
            _judge_value(value, name, password_name, claims)


def _find_statements(
    text: str, claims: _Claims, patterns: tuple[re.Pattern[str], ...] = _STATEMENTS
) -> None:
    for pattern in patterns:
        for match in pattern.finditer(text):
            name = match.group("name").lower()
            password_name = "secret" in name or not any(
                word in name for word in _STATEMENT_KEY_WORDS
            )
            _judge_value(match, name, password_name, claims, prose=True)


def _judge_value(
    match: re.Match[str], name: str, password_name: bool, claims: _Claims, *, prose: bool = False
) -> None:
    """Claim the value of `name: value` (or `name is value`) when it looks like a real secret."""
    start, end = match.span("value")
    raw = match.group("value")
    if prose and raw.startswith("]("):
        return  # `[数据库密码](db-2.md)`: a markdown link's target after its text
    value = _unquote(raw)
    if value != raw:
        start, end = start + 1, end - 1
    elif prose:  # the sentence around the value is not part of it
        stripped = value.lstrip(_PROSE_PUNCTUATION)
        start += len(value) - len(stripped)
        value = stripped.rstrip(_PROSE_PUNCTUATION)
        end = start + len(value)
    if not value or value.startswith("-----") or not claims.free(start, end):
        return  # (a key's header is `_find_inline_keys`'s to claim, with its material)
    if password_name and "secret" in name and _looks_like_aws_secret(value):
        claims.claim(start, end, "aws-secret-key", 0)
    elif password_name and _looks_like_password(value) and (
        not prose or _stated_password(value, latin_in_chinese=_CHINESE_NAME.match(name) is not None)
    ):
        claims.claim(start, end, "password", 0)
    elif (password_name and _looks_like_pin(value, match.string, end) and _PIN_NAME.search(name)
          and not _names_another_pin(name, value, match.string, match.start())):
        claims.claim(start, end, "password", 0)
    elif (password_name and _AUTH_CODE.fullmatch(value) and "授" in name
          and _looks_random(value, minimum=3.0)):
        claims.claim(start, end, "password", 0)  # a mail service's 授权码, used as a password
    elif not password_name and (_looks_like_key(value) or (
            _UUID.match(value) is not None and _API_KEY_NAME.search(name) is not None)):
        claims.claim(start, end, "api-key", 0)


_PROSE_PUNCTUATION = ".,;:!?()[]{}\"'`"
# `SHA-256`, `AES_128_GCM`, `base64-encoded`: names of things, said in a sentence.
# `2FA-protected`, `end-to-end`: words joined by hyphens (a part may be a short term).
_COMPOUND = re.compile(r"^(?:[^\W\d_]+|\w{1,3})(?:-(?:[^\W\d_]+|\w{1,3}))+$")
_TERM = re.compile(r"^(?:[A-Z0-9]+(?:[-_.][A-Z0-9]+)*|[a-z][a-z0-9]*(?:-[a-z0-9]+)+)$")


# (And the Japanese and Korean names: their sentences set a Latin value apart the same way.)
_CHINESE_NAME = re.compile(
    r"^(?:密[码碼]|口令|[密秘]钥|令牌|pin[码碼]|授[权權][码碼]|パスワード|暗証番号|비밀번호)$")


def _stated_password(value: str, *, latin_in_chinese: bool = False) -> bool:
    """A password stated in a sentence: more than a word with a digit, which prose is full of.

    Stricter than an assignment's value, since `the secret is SHA-256` and `the
    password is base64-encoded` are things people write about passwords. In a Chinese
    sentence (`latin_in_chinese`: the name is Chinese) a Latin word of eight or more
    characters mixing letters and digits stands apart from the prose around it
    (`家里的wifi密码是 hunter2024`); shorter ones are names (`base64`, `sha256`).
    """
    if len(value) < 8 or _TERM.match(value) or _COMPOUND.match(value):
        return False
    if latin_in_chinese and any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
        return True
    return _classes(value) >= 3 or (len(value) >= 12 and _looks_random(value, minimum=3.0))


# What a secret PIN unlocks or whose it is: `card_pin`, `ATM PIN code`, `user-pin`.
_UNLOCKS = frozenset({
    "atm", "card", "bank", "debit", "credit", "sim", "phone", "door", "gate", "garage",
    "safe", "lock", "alarm", "login", "account", "user", "admin", "master", "wallet",
    "security", "access", "my", "your", "pass", "secret",
})
_WORDS = re.compile(r"[a-z]+")
_POSTAL_PIN = re.compile(r"[1-9][0-9]{5}")


def _names_another_pin(name: str, value: str, text: str, start: int) -> bool:
    """A pin that is a number, not a secret: one of a board in code (`LED_PIN = 2048`,
    `pin_led`: `pin` joined to words none of which is one a PIN unlocks), or India's
    postal code (`PIN code 560001`: six digits after "PIN code", with no word a PIN
    unlocks before it on its line).
    """
    parts = _segments(name)
    if len(parts) > 1 and "pin" in parts and not _UNLOCKS.intersection(parts):
        return True
    if re.fullmatch(r"pin[ \t]?code", name) and _POSTAL_PIN.fullmatch(value):
        line = text[max(text.rfind("\n", max(0, start - 80), start) + 1, start - 80) : start]
        return not _UNLOCKS.intersection(_WORDS.findall(line.lower()))
    return False


def _looks_like_pin(value: str, text: str, end: int) -> bool:
    """Four to twelve digits, not all one or two of them (`0000`), not a run up or down
    (`1234`, `123456`: the examples of a weak PIN), and not a count or a date
    (`密码长度 12 位`, `the PIN is 4 digits`, `2024 年`)."""
    return (
        _PIN.fullmatch(value) is not None and len(set(value)) > 2
        and value not in "01234567890" and value not in "9876543210"
        and _UNIT_AFTER.match(text, end) is None
    )


def _looks_like_aws_secret(value: str) -> bool:
    return (
        _AWS_SECRET.match(value) is not None
        and any(c.isupper() for c in value) and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
        and not _looks_like_placeholder(value)
    )


# Before a lone header on its line: quote and list marks, a name and its `:` or `=`, a quote.
_LONE_HEADER_LEAD = re.compile(r"""[ \t>*\-]*+(?:[\w.\-]{1,40}+[ \t]*+[:：=][ \t]*+)?["'`]?""")
# After it: a closing quote, blank lines, then the end of the text or a code block's fence.
_LONE_HEADER_TAIL = re.compile(r"""["'`]?[ \t\r]*+(?:\n[ \t\r]*+)*+(?:\Z|```|~~~)""")


def _lone_header(text: str, start: int, end: int) -> bool:
    """The header alone on its line (after a name or quote marks at most, looked for 64
    characters back), with only blank lines after it to the end of the text or of a code
    block: a sentence naming a header goes on after it, or has words before it."""
    line_start = text.rfind("\n", max(0, start - 64), start) + 1
    if line_start == 0 and start > 64:
        return False
    if _LONE_HEADER_LEAD.fullmatch(text, line_start, start) is None:
        return False
    return _LONE_HEADER_TAIL.match(text, end) is not None


def _key_material_follows(text: str, position: int) -> bool:
    """A real key block, not a sentence naming the header: key material on the next lines."""
    for following in text[position : position + 4096].split("\n")[1:4]:
        if not following.strip():
            continue
        return bool(_KEY_MATERIAL.match(following))
    return False


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`":
        return value[1:-1]
    return value


def _segments(name: str) -> list[str]:
    return [part for part in re.split(r"[_.\-]+", name) if part]


def _is_password_name(name: str) -> bool:
    return any(word in name for word in _PASSWORD_WORDS) or any(
        part in _PASSWORD_SEGMENTS for part in _segments(name)
    )


def _is_key_name(name: str) -> bool:
    parts = _segments(name)
    return any(word in name for word in _KEY_WORDS) or bool(parts and parts[-1] in _KEY_SEGMENTS)


def _looks_like_placeholder(value: str) -> bool:
    lowered = value.lower()
    if any(word in lowered for word in _PLACEHOLDER_WORDS):
        return True
    return len(set(lowered)) <= 2


def _is_reference(value: str) -> bool:
    """An environment lookup, a template, a path or a URL: where a secret is, not the secret."""
    return (
        value.startswith(("$", "%", "/", "~", "./", "../", "@", "&", "{"))
        or _DOTTED_NAME.match(value) is not None
        or "://" in value
        or "(" in value
        or "[" in value
        or value.lower().startswith(("env:", "process.env", "os.environ", "vault:", "op://"))
    )


def _classes(value: str) -> int:
    return sum((
        any(c.islower() for c in value),
        any(c.isupper() for c in value),
        any(c.isdigit() for c in value),
        any(not c.isalnum() for c in value),
    ))


def _entropy(value: str) -> float:
    counts = Counter(value)
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def _looks_random(value: str, *, minimum: float) -> bool:
    return _entropy(value) >= minimum


def _looks_like_password(value: str) -> bool:
    if len(value) < 6 or len(value) > 200 or any(c.isspace() for c in value):
        return False
    if re.search(_CJK, value) or _is_reference(value) or _looks_like_placeholder(value):
        return False
    if value.lower() in _PLAIN_WORDS or _WORDS_JOINED.match(value) or _UUID.match(value):
        return False
    if _SNAKE_CASE.match(value):
        return False
    if _classes(value) >= 2:
        return True
    return len(value) >= 16 and _looks_random(value, minimum=3.5)


def _is_identifier(value: str) -> bool:
    """A name from code (`delivery_s3_prefix`, `PKCS7PrivateKeyTypes`), not a random token.

    Title-case words cover at least 70% of a CamelCase name, but of only about
    1% of random 20-character base62 strings (0.1% at 32 characters).
    """
    if _SNAKE_CASE.match(value):
        return True
    return sum(len(word) for word in _TITLE_WORD.findall(value)) >= 0.7 * len(value)


def _looks_like_key(value: str) -> bool:
    if len(value) < 20 or len(value) > MAX_VALUE_CHARS or not _TOKEN_CHARS.match(value):
        return False
    if _UUID.match(value) or _WORDS_JOINED.match(value) or _is_reference(value):
        return False
    if _is_identifier(value):
        return False
    if _looks_like_placeholder(value):
        return False
    has_digit = any(c.isdigit() for c in value)
    has_letter = any(c.isalpha() for c in value)
    return has_digit and has_letter and _looks_random(value, minimum=3.0)


def _mask(text: str, spans: list[tuple[int, int, int]]) -> tuple[str, list[int]]:
    """`text` with each (start, end, keep) span masked; also where each span (sorted) begins now."""
    out: list[str] = []
    position = 0
    length = 0
    anchors = []
    for start, end, keep in sorted(spans):
        anchors.append(length + max(0, start - position))
        if start < position:  # overlaps the span before: show nothing more of it
            start, keep = position, 0
        if end <= start:
            continue
        kept = text[start : start + min(keep, end - start)]
        replacement = kept if keep >= end - start else kept + MASK
        out += (text[position:start], replacement)
        length += start - position + len(replacement)
        position = end
    out.append(text[position:])
    return "".join(out), anchors


# In an excerpt only: a long run of key-like characters mixing upper case, lower case and
# digits is masked even when no rule named it (an AWS secret access key after its key id).
_KEYLIKE = re.compile(r"(?<![A-Za-z0-9+/=_\-])(?=[A-Za-z0-9+/=_\-]*[0-9])"
                      r"(?=[A-Za-z0-9+/=_\-]*[a-z])(?=[A-Za-z0-9+/=_\-]*[A-Z])"
                      r"[A-Za-z0-9+/=_\-]{20,}")


def _excerpt(text: str, anchor: int) -> str:
    """At most EXCERPT_CHARS of the masked line `text` (stripped), around `anchor`; a
    key-like run no rule named is masked too (the excerpt is shown, never the secret).
    Only a window around the anchor is looked at, so a long line costs no more."""
    low, high = max(0, anchor - 200), min(len(text), anchor + 200)
    before = _KEYLIKE.sub(MASK, text[low:anchor])
    window = before + _KEYLIKE.sub(MASK, text[anchor:high])
    anchor = len(before)
    if low == 0 and high == len(text) and len(window) <= EXCERPT_CHARS:
        return window
    start = max(0, min(anchor - EXCERPT_LEAD, len(window) - EXCERPT_CHARS))
    piece = window[start : start + EXCERPT_CHARS]
    return (("…" if start or low else "") + piece
            + ("…" if start + EXCERPT_CHARS < len(window) or high < len(text) else ""))


__all__ = ["LABELS", "SecretMatch", "decoded_secrets", "find_secrets", "find_secrets_in_name",
           "has_secrets", "redact", "redact_name"]
