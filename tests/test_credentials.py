"""Secret detection: what is a credential, what is only prose about one, and that nothing leaks.

Fake secrets are assembled at run time so that no literal in this file looks
like a live credential to a secret scanner.
"""

from __future__ import annotations

import pytest

from sage_mem.credentials import LABELS, find_secrets, has_secrets, redact

RANDOM = "Zx8Kq2Lm9Vb4Nw7Tr1Yp5Hs3Jd6Fg0Ac2Ev4QwUo"
AWS_KEY = "AK" + "IA" + "Q7ZK3M2XW5RT9PLB"
AWS_SESSION_KEY = "AS" + "IA" + "Q7ZK3M2XW5RT9PLB"
GITHUB = "gh" + "p_" + RANDOM[:36]
GITHUB_OAUTH = "gh" + "o_" + RANDOM[:36]
GITHUB_APP = "gh" + "s_" + RANDOM[:36]
GITHUB_PAT = "github" + "_pat_" + "11ABCDEFG0" + RANDOM + "_" + RANDOM[:20]
GITLAB = "gl" + "pat-" + RANDOM[:20]
SLACK = "xo" + "xb-" + "123456789012-" + "987654321098-" + RANDOM[:24]
OPENAI = "s" + "k-proj-" + RANDOM
ANTHROPIC = "s" + "k-ant-api03-" + RANDOM
JWT = (
    "ey" + "JhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    + "ey" + "JzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0."
    + "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = (
    "-----BEGIN " + "RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA7" + RANDOM + "\n"
    "-----END RSA PRIVATE KEY-----"
)
OPENSSH = (
    "-----BEGIN " + "OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ" + RANDOM + "\n"
    "-----END OPENSSH PRIVATE KEY-----"
)
HEX_KEY = "9f8e7d6c5b4a39281706f5e4d3c2b1a0"
SHA256_EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


@pytest.mark.parametrize(
    ("text", "kind", "line"),
    [
        pytest.param(f"aws key {AWS_KEY}", "aws-access-key-id", 1, id="aws-access-key"),
        pytest.param(f"AWS_ACCESS_KEY_ID={AWS_SESSION_KEY}", "aws-access-key-id", 1,
                     id="aws-session-key"),
        pytest.param(f"notes\n\ntoken {GITHUB}", "github-token", 3, id="github-classic"),
        pytest.param(f"oauth: {GITHUB_OAUTH}", "github-token", 1, id="github-oauth"),
        pytest.param(f"app {GITHUB_APP}", "github-token", 1, id="github-app"),
        pytest.param(f"GH_TOKEN={GITHUB_PAT}", "github-token", 1, id="github-fine-grained"),
        pytest.param(f"gitlab {GITLAB}", "gitlab-token", 1, id="gitlab"),
        pytest.param(f"bot: {SLACK}", "slack-token", 1, id="slack"),
        pytest.param(f"OPENAI_API_KEY={OPENAI}", "openai-key", 1, id="openai"),
        pytest.param(f"export ANTHROPIC_API_KEY={ANTHROPIC}", "anthropic-key", 1, id="anthropic"),
        pytest.param(f"session cookie {JWT}", "jwt", 1, id="jwt"),
        pytest.param(f"Authorization: Bearer {RANDOM}", "bearer-token", 1, id="bearer"),
        pytest.param(f"deploy key:\n\n```\n{PEM}\n```", "private-key", 4, id="rsa-private-key"),
        pytest.param(OPENSSH, "private-key", 1, id="openssh-private-key"),
        pytest.param("password=hunter2x", "password", 1, id="password-equals"),
        pytest.param("db passwd: Tr0ub4dor&3", "password", 1, id="passwd-colon"),
        pytest.param('{"client_secret": "8fK2mQ9xLp3Z"}', "password", 1, id="secret-json"),
        pytest.param("secret: 'P@ssw0rd!'", "password", 1, id="secret-quoted"),
        pytest.param("数据库密码：Tr0ub4dor&3", "password", 1, id="password-chinese-colon"),
        pytest.param("服务器 root 口令: Xk9#mP2qL", "password", 1, id="password-chinese-word"),
        pytest.param(f"api_key: {HEX_KEY}", "api-key", 1, id="api-key-hex"),
        pytest.param(f"STRIPE_TOKEN = '{RANDOM[:28]}'", "api-key", 1, id="token-assignment"),
        pytest.param(f"x-api-key: {RANDOM[:32]}", "api-key", 1, id="api-key-header"),
        pytest.param(f"支付接口密钥：{RANDOM[:24]}", "api-key", 1, id="api-key-chinese"),
        pytest.param(f"---\ndescription: deploy notes\n---\nAPI_TOKEN={RANDOM}\n", "api-key", 4,
                     id="token-in-memory-body"),
    ],
)
def test_finds_secret(text: str, kind: str, line: int) -> None:
    matches = find_secrets(text)
    assert [(m.kind, m.line) for m in matches] == [(kind, line)]
    assert matches[0].kind in LABELS


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("Never commit a password or an API key to the memory folder.", id="prose"),
        pytest.param("The token expires in an hour; refresh it with `gh auth`.", id="prose-token"),
        pytest.param("password: see the 1Password entry 'prod db'", id="password-pointer"),
        pytest.param("Password: required", id="password-field-doc"),
        pytest.param("secret: true", id="secret-boolean"),
        pytest.param("passwd: $DB_PASSWORD", id="env-variable"),
        pytest.param("api_key: ${OPENAI_API_KEY}", id="template-variable"),
        pytest.param("api_key: os.environ['OPENAI_API_KEY']", id="environ-lookup"),
        pytest.param("api_key: YOUR_API_KEY_HERE", id="placeholder-words"),
        pytest.param("token: <paste-your-token>", id="placeholder-angle"),
        pytest.param("password: ********", id="already-masked"),
        pytest.param("secret_file: ~/.ssh/id_ed25519", id="path-to-secret"),
        pytest.param("max_tokens=4096", id="token-count"),
        pytest.param("tokenizer: bert-base-multilingual-cased", id="tokenizer-name"),
        pytest.param("AWS documents the key AKIAIOSFODNN7EXAMPLE", id="aws-doc-example"),
        pytest.param(f"sha256: {SHA256_EMPTY}", id="sha256-hex"),
        pytest.param(f"下载后校验 sha256 为 {SHA256_EMPTY}", id="sha256-hex-chinese"),
        pytest.param("fixed in commit 9fceb02d0ae598e95dc970b74767f19372d61af8", id="git-hash"),
        pytest.param("request id 123e4567-e89b-12d3-a456-426614174000", id="uuid"),
        pytest.param("api_key: 123e4567-e89b-12d3-a456-426614174000", id="uuid-named-key"),
        pytest.param("A PEM starts with -----BEGIN RSA PRIVATE KEY-----.", id="pem-header-prose"),
        pytest.param("use the ask-questions-first-then-answer-later approach", id="dashed-words"),
        pytest.param("Bearer tokens go in the Authorization header.", id="bearer-prose"),
        pytest.param("不要把密码写进记忆里，密钥放在保险库。", id="chinese-prose"),
        pytest.param("密码：请向管理员索取", id="chinese-password-pointer"),
        pytest.param("令牌: 每小时过期一次", id="chinese-token-prose"),
        pytest.param("用户的猫叫芝麻，喜欢晒太阳", id="chinese-memory"),
        pytest.param("description: tokens are split into bigrams for CJK", id="description"),
        pytest.param("label sk-" + "this-is-only-words-and-dashes", id="token-prefix-then-words"),
        pytest.param("private_key: PKCS7PrivateKeyTypes,", id="code-type-annotation"),
        pytest.param("pass_context = jinja2.pass_context", id="code-attribute"),
        pytest.param("session_auth=s3_disable_express_session_auth", id="code-snake-case"),
        pytest.param("self.delivery_s3_key_prefix = prefix_for_2024_logs", id="code-key-prefix"),
        pytest.param('"Action": "secretsmanager:GetSecretValue"', id="iam-action"),
        pytest.param(f"Signature: {HEX_KEY}", id="cache-signature"),
    ],
)
def test_ignores_text_that_is_not_a_secret(text: str) -> None:
    assert find_secrets(text) == []
    assert not has_secrets(text)


@pytest.mark.parametrize(
    ("secret", "shown"),
    [
        pytest.param(AWS_KEY, "AKIA****", id="aws-keeps-prefix"),
        pytest.param(GITHUB, "ghp_****", id="github-keeps-prefix"),
        pytest.param(JWT, "eyJ****", id="jwt"),
        pytest.param(RANDOM, "****", id="generic"),
    ],
)
def test_excerpt_masks_the_secret(secret: str, shown: str) -> None:
    [match] = find_secrets(f"credential for deploys: token={secret} (rotate monthly)")
    assert shown in match.excerpt_redacted
    assert secret not in match.excerpt_redacted
    assert secret[6:18] not in match.excerpt_redacted


def test_excerpt_of_a_password_keeps_the_name_and_hides_the_value() -> None:
    [match] = find_secrets("db_password = 'hunter2x!'")
    assert match.excerpt_redacted == "db_password = '****'"
    assert match.column == len("db_password = '") + 1


def test_every_secret_on_a_line_is_masked_in_each_excerpt() -> None:
    matches = find_secrets(f"keys: {AWS_KEY} and {GITHUB}")
    assert [m.kind for m in matches] == ["aws-access-key-id", "github-token"]
    for match in matches:
        assert AWS_KEY not in match.excerpt_redacted
        assert GITHUB not in match.excerpt_redacted


def test_long_line_excerpt_is_cut_around_the_secret() -> None:
    line = "word " * 60 + f"token={RANDOM} " + "word " * 60
    [match] = find_secrets(line)
    assert len(match.excerpt_redacted) <= 82
    assert "token=****" in match.excerpt_redacted


def test_line_numbers_count_lf_lines_with_crlf_endings() -> None:
    [match] = find_secrets(f"one\r\ntwo\r\ntoken {GITHUB}\r\n")
    assert (match.line, match.column) == (3, 7)


def test_private_key_is_reported_once_and_its_body_never_shown() -> None:
    [match] = find_secrets(PEM)
    assert match.excerpt_redacted == "-----BEGIN RSA PRIVATE KEY-----"
    assert RANDOM not in match.excerpt_redacted


def test_redact_masks_every_secret_and_keeps_everything_else() -> None:
    text = f"line one\r\npassword=hunter2x\nkey {GITHUB} here\n猫叫芝麻\n"
    assert redact(text) == "line one\r\npassword=****\nkey ghp_**** here\n猫叫芝麻\n"
    assert redact("nothing to hide") == "nothing to hide"


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_redact_masks_a_private_keys_material_line_by_line(newline: str) -> None:
    text = newline.join(["before", *PEM.split("\n"), "after"])
    masked = redact(text)
    assert RANDOM not in masked
    assert masked.count("\n") == text.count("\n")  # the text keeps its lines
    lines = masked.split("\n")
    assert lines[0].rstrip("\r") == "before" and lines[-1] == "after"
    assert lines[1].startswith("-----BEGIN RSA PRIVATE KEY-----")
    assert "-----END RSA PRIVATE KEY-----" in masked


def test_redact_masks_to_the_end_a_private_key_without_its_end_line() -> None:
    text = PEM.split("-----END")[0] + "trailing material"
    masked = redact(text)
    assert RANDOM not in masked and "trailing material" not in masked
    assert masked.count("\n") == text.count("\n")
