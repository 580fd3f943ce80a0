"""Secret detection: what is a credential, what is only prose about one, and that nothing leaks.

Fake secrets are assembled at run time so that no literal in this file looks
like a live credential to a secret scanner.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from reliability_support import assert_one_line_error, cli_process
from support import write_memory

from sage_mem.checks.credentials import LABELS, find_secrets, has_secrets, redact

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
URL_PASSWORD = "Tr0ub4dor" + "3xQ"
SLACK_WEBHOOK = "https://hooks.slack.com/" + "services/T024BE7LD/B024BE7LH/" + RANDOM[:24]
PEM_ESCAPED = (  # a key pasted from JSON or .env: one line, newlines written as backslash-n
    "-----BEGIN " + "RSA PRIVATE KEY-----\\n"
    "MIIEowIBAAKCAQEA7" + RANDOM + "\\n" + RANDOM[::-1] + "\\n"
    "-----END RSA PRIVATE KEY-----\\n"
)
AWS_SECRET = "wJalr" + "XUtnFEMI/K7MDENG/bPxRfiCY" + "z8Kq2Lm9Vb"  # 40 characters
PYPI = "py" + "pi-AgEIcHlwaS5vcmcCJDU" + RANDOM + RANDOM[::-1] + "_" + RANDOM[:30]
ZERO_WIDTH_GITHUB = GITHUB[:12] + "\u200b" + GITHUB[12:]
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
        # passwords inside URLs (scheme://user:password@host)
        pytest.param(f"DATABASE_URL=postgres://admin:{URL_PASSWORD}@db:5432/app", "url-password",
                     1, id="url-postgres"),
        pytest.param(f"clone from https://u:{URL_PASSWORD}@git.internal/repo.git", "url-password",
                     1, id="url-https"),
        pytest.param(f"cache: redis://:{URL_PASSWORD}@cache:6379/0", "url-password", 1,
                     id="url-redis-no-user"),
        pytest.param(f"mysql://root:p%40ss{URL_PASSWORD}@127.0.0.1/app", "url-password", 1,
                     id="url-percent-encoded"),
        pytest.param(f"[prod](postgresql://app:{URL_PASSWORD}@db.internal/app)", "url-password", 1,
                     id="url-in-markdown-link"),
        pytest.param(f"amqp://deploy:p@ss{URL_PASSWORD}@mq:5672", "url-password", 1,
                     id="url-at-sign-in-password"),
        pytest.param(f"alerts go to {SLACK_WEBHOOK}", "slack-webhook", 1, id="slack-webhook"),
        pytest.param(f'{{"private_key": "{PEM_ESCAPED}"}}', "private-key", 1,
                     id="private-key-escaped-newlines"),
        pytest.param("-----BEGIN " + f"OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjE{RANDOM} "
                     "-----END OPENSSH PRIVATE KEY-----", "private-key", 1,
                     id="private-key-flattened-to-one-line"),
        # passwords stated in prose
        pytest.param("数据库的密码是 Tr0ub4dor&3", "password", 1, id="prose-chinese-password-is"),
        pytest.param("数据库密码是Tr0ub4dor&3，别外传", "password", 1, id="prose-chinese-no-space"),
        pytest.param("服务器的口令为 Xk9#mP2qL。", "password", 1, id="prose-chinese-wei"),
        pytest.param("the password is Tr0ub4dor&3.", "password", 1, id="prose-password-is"),
        pytest.param("The root password was Xk9#mP2qL, rotate it", "password", 1,
                     id="prose-password-was"),
        pytest.param(f"the API key is {RANDOM[:32]}", "api-key", 1, id="prose-api-key-is"),
        pytest.param(f"the secret is {AWS_SECRET}", "aws-secret-key", 1, id="prose-aws-secret"),
        pytest.param(f"AWS secret access key is {AWS_SECRET}", "aws-secret-key", 1,
                     id="prose-aws-secret-access-key"),
        pytest.param(f"aws_secret_access_key = {AWS_SECRET}", "aws-secret-key", 1,
                     id="aws-secret-assignment"),
        pytest.param(f"twine upload -u __token__ -p {PYPI}", "pypi-token", 1, id="pypi-token"),
        # vendor tokens with a public prefix (written out: the gate test reads this file's strings)
        pytest.param("twilio SK2b4f1c9e8d7a6b5c4d3e2f1a0b9c8d7e", "twilio-key", 1, id="twilio"),
        pytest.param("mailgun key-3ax6xnjp29jd6fds4gc373sgvjxteol0", "mailgun-key", 1,
                     id="mailgun"),
        pytest.param("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", "shopify-token", 1, id="shopify"),
        pytest.param("square sq0atp-Ab3dEfGhIjKlMnOpQrStUv", "square-token", 1, id="square"),
        pytest.param("jira ATATT3xFfGF0T4pX9qLm2Zr8Vb7Nc6Kd5Jh4Gf3Ds2Aa1"
                     "xyzQWErty0987poiuLKJhg=9C1D",
                     "atlassian-token", 1, id="atlassian"),
        pytest.param("lin_api_Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789abcd", "linear-key", 1,
                     id="linear"),
        pytest.param("client 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", "google-oauth-secret", 1,
                     id="google-oauth"),
        pytest.param("gsk_Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789abcdEfGhIjKlMnOp", "groq-key", 1,
                     id="groq"),
        pytest.param("r8_Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789", "replicate-token", 1,
                     id="replicate"),
        pytest.param("AGE-SECRET-KEY-1QQPQZRDYGF6XSRJ7LPMVGQ6D4SUVDJZTGXY9WKW0UR5E0ZKS9NPS0XW3KS",
                     "age-secret-key", 1, id="age"),
        pytest.param("DOPPLER_TOKEN is dp.st.prd.Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789abcdEfG",
                     "doppler-token", 1, id="doppler"),
        pytest.param("VAULT_TOKEN=hvs.CAESIAb3dEfGhIjKlMnOpQrStUvWxYz0123456789abcd",
                     "vault-token", 1, id="vault"),
        pytest.param("bot MTA4NjQ1NzE4OTIzNzA4NjQ2Mg.GxYz12.Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789ab",
                     "discord-token", 1, id="discord"),
        pytest.param("telegram 6123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw8",
                     "telegram-bot-token", 1, id="telegram"),
        pytest.param("https://acct.blob.core.windows.net/c?sv=2022-11-02&sp=rl"
                     "&sig=Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789abcdE%3D", "signed-url", 1,
                     id="azure-sas"),
        pytest.param("https://b.s3.amazonaws.com/k?X-Amz-Credential=AK%2F&X-Amz-Signature="
                     "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0",
                     "signed-url", 1, id="s3-presigned"),
        pytest.param("curl -u deploy:Sup3rS3cret! https://ci.internal/api", "curl-credentials", 1,
                     id="curl-u"),
        pytest.param("curl --user='deploy:Xk9#mP2qL' https://ci.internal", "curl-credentials", 1,
                     id="curl-user-quoted"),
        pytest.param("sshpass -p 'Tr0ub4dor&3' ssh root@web1", "sshpass-password", 1,
                     id="sshpass"),
        pytest.param("xapp-1-A0123456789-1234567890123-abcdef0123456789abcdef0123456789",
                     "slack-token", 1, id="slack-app-token"),
        pytest.param("HEROKU_API_KEY=01234567-89ab-cdef-0123-456789abcdef", "api-key", 1,
                     id="uuid-named-api-key"),
        # Chinese names people write (秘钥 beside 密钥; a mail service's 授权码), a Latin name
        # with the Chinese "is", and the webhooks of chat services
        pytest.param("秘钥：9f8e7d6c5b4a39281706f5e4d3c2b1a0", "api-key", 1,
                     id="zh-mi-yao-variant"),
        pytest.param("接口秘钥是 Ab3dEfGhIjKlMnOp1234", "api-key", 1, id="zh-mi-yao-statement"),
        pytest.param("微信支付 APIv3 密钥 Ab3dEfGhIjKlMnOpQrStUvWxYz012345", "api-key", 1,
                     id="zh-key-named-loosely"),
        pytest.param("QQ邮箱的授权码是 qwhzkvmrtplxbnse", "password", 1, id="zh-mail-auth-code"),
        pytest.param("SMTP 授权码：qwhzkvmrtplxbnse", "password", 1, id="zh-mail-auth-code-colon"),
        pytest.param("腾讯云 SecretKey 是 Ab3dEfGhIjKlMnOpQrStUvWxYz012345", "password", 1,
                     id="latin-name-chinese-is"),
        pytest.param("api_key 为 9f8e7d6c5b4a39281706f5e4d3c2b1a0", "api-key", 1,
                     id="latin-key-chinese-wei"),
        pytest.param("飞书机器人 https://open.feishu.cn/open-apis/bot/v2/hook/"
                     "0a1b2c3d-4e5f-6789-abcd-ef0123456789", "webhook-url", 1, id="feishu-webhook"),
        pytest.param("企业微信 https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key="
                     "0a1b2c3d-4e5f-6789-abcd-ef0123456789", "webhook-url", 1, id="wecom-webhook"),
        pytest.param("https://discord.com/api/webhooks/1234567890123456789/"
                     "Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789-Ab3dEfGhIjKlMnOpQrStUvWxYz01",
                     "webhook-url", 1, id="discord-webhook"),
        pytest.param("https://acme.webhook.office.com/webhookb2/0a1b2c3d-4e5f-6789-abcd-"
                     "ef0123456789@0a1b2c3d-4e5f-6789-abcd-ef0123456789/IncomingWebhook/"
                     "9f8e7d6c5b4a39281706f5e4d3c2b1a0/0a1b2c3d-4e5f-6789-abcd-ef0123456789",
                     "webhook-url", 1, id="teams-webhook"),
        # tokens split by invisible characters
        pytest.param(f"token {ZERO_WIDTH_GITHUB}", "github-token", 1, id="zero-width-space"),
        pytest.param(AWS_KEY[:4] + "\u2060" + AWS_KEY[4:], "aws-access-key-id", 1,
                     id="word-joiner"),
        pytest.param("\u200c".join(OPENAI), "openai-key", 1, id="zero-width-non-joiner-throughout"),
        pytest.param(f"key {GITHUB[:20]}\u200d\ufeff{GITHUB[20:]}", "github-token", 1,
                     id="zero-width-joiner-and-bom"),
        pytest.param(f"url: https://admin:{URL_PASSWORD[:4]}\u200b{URL_PASSWORD[4:]}@db",
                     "url-password", 1, id="zero-width-in-url-password"),
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
        pytest.param("idempotency_key: 123e4567-e89b-12d3-a456-426614174000",
                     id="uuid-named-other-key"),
        pytest.param("api_key_id = 123e4567-e89b-12d3-a456-426614174000", id="uuid-named-key-id"),
        pytest.param("curl -u admin: https://ci.internal/api", id="curl-asks-for-password"),
        pytest.param("curl -u $CI_USER:$CI_PASS https://ci.internal/api", id="curl-env-lookups"),
        pytest.param("curl -u user:password https://ci.internal/api", id="curl-placeholder"),
        pytest.param("curl --data-urlencode q=1 -u deploy https://x.test", id="curl-user-only"),
        pytest.param("sshpass -p $DEPLOY_PW ssh web1", id="sshpass-env-lookup"),
        pytest.param("sshpass -f ~/.deploy_pw ssh web1", id="sshpass-from-file"),
        pytest.param("MTV, NBA and ODD NOTES", id="capitals-like-discord-prefixes"),
        pytest.param("message 123456789:AAxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                     id="telegram-placeholder"),
        pytest.param("https://acct.blob.core.windows.net/c?sv=2022-11-02&sig=<signature>",
                     id="sas-placeholder"),
        pytest.param("VAULT_ADDR=https://vault.internal; hvs.example_token_here",
                     id="vault-example"),
        pytest.param("SKU SK-1234 and SK99", id="sku-like-twilio-prefix"),
        pytest.param("授权码在邮箱设置里生成，是 16 位小写字母", id="zh-auth-code-prose"),
        pytest.param("密钥管理服务 KMS；秘钥 已轮换", id="zh-key-prose"),
        pytest.param("password是否正确；token 是一个字符串；the token 是 JWT 格式",
                     id="latin-name-chinese-is-prose"),
        pytest.param("https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=YOUR_KEY",
                     id="wecom-webhook-placeholder"),
        pytest.param("https://open.feishu.cn/open-apis/bot/v2/hook/"
                     "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", id="feishu-webhook-placeholder"),
        pytest.param("see discord.com/api/webhooks in the docs", id="discord-webhook-docs"),
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
        # URLs: no password, or a placeholder where it goes
        pytest.param("postgres://user:password@localhost:5432/app", id="url-placeholder-password"),
        pytest.param("postgres://postgres:postgres@localhost/app", id="url-password-is-the-user"),
        pytest.param("amqp://guest:guest@localhost:5672/", id="url-default-guest"),
        pytest.param("redis://:${REDIS_PASSWORD}@cache:6379", id="url-template-password"),
        pytest.param("mysql://app:$DB_PASS@db/app", id="url-env-password"),
        pytest.param("https://<user>:<password>@host/path", id="url-angle-placeholders"),
        pytest.param("mysql://root:****@db/app", id="url-masked-password"),
        pytest.param("https://user:xxx@example.com", id="url-xxx-password"),
        pytest.param("postgres://app:changeme@localhost/app", id="url-changeme"),
        pytest.param("postgres://USER:PASS@HOST:PORT/DB", id="url-capital-placeholders"),
        pytest.param("postgres://app:DB_PASSWORD@db/app", id="url-password-names-a-variable"),
        pytest.param("postgres://{user}:{password}@{host}/{db}", id="url-format-fields"),
        pytest.param("https://user:pw@host", id="url-pw-placeholder"),
        pytest.param("https://github.com/owner/repo/pull/11#discussion", id="url-plain"),
        pytest.param("ssh://git@github.com:22/owner/repo.git", id="url-user-without-password"),
        pytest.param("git clone git@github.com:owner/repo.git", id="scp-like-git-address"),
        pytest.param("http://[::1]:8080/health and http://10.0.0.1:9000", id="url-ports"),
        pytest.param("https://example.com/a:b@c and https://host/?q=a:b@c", id="url-at-in-path"),
        pytest.param("write to alice@example.com: thanks, https://x.org", id="email-near-url"),
        pytest.param("https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
                     id="slack-webhook-documented-example"),
        pytest.param("post to the hooks.slack.com/services/ endpoint", id="slack-webhook-prose"),
        # prose that speaks of a password without giving one
        pytest.param("reset the password in the admin panel", id="prose-reset-password"),
        pytest.param("密码在 1Password 里", id="prose-chinese-password-in-1password"),
        pytest.param("the password is stored in 1Password", id="prose-password-is-stored"),
        pytest.param("the password is changeme", id="prose-password-placeholder"),
        pytest.param("the password is required for every login", id="prose-password-required"),
        pytest.param("the password is <password>", id="prose-password-angle"),
        pytest.param("the password is ********", id="prose-password-masked"),
        pytest.param("the password is forgotten, ask Li", id="prose-password-word"),
        pytest.param("the secret is out: we ship on Friday", id="prose-secret-is-out"),
        pytest.param("the password is `${DB_PASSWORD}`", id="prose-password-template"),
        pytest.param("密码是什么？", id="prose-chinese-question"),
        pytest.param("密码是 xxx", id="prose-chinese-placeholder"),
        pytest.param("密码为空，首次登录时设置", id="prose-chinese-empty"),
        pytest.param("the token is valid for one hour", id="prose-token-is-valid"),
        pytest.param("the API key is in the vault under prod/openai", id="prose-key-pointer"),
        pytest.param('raise AuthError("Client secret is required")', id="prose-in-code"),
        pytest.param("the secret is SHA-256, the token is HMAC_SHA256 signed", id="prose-terms"),
        pytest.param("the password is base64-encoded before it is sent", id="prose-kebab-term"),
        pytest.param("MultiHostUrl('https://foo.com:123,foo:bar@bar.com/path')",
                     id="url-multi-host"),
        # long encoded data that is not a secret
        pytest.param("![chart](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
                     "AAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==)", id="data-uri-image"),
        pytest.param("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2"
                     "l9GKJl dev@laptop", id="ssh-public-key-ed25519"),
        pytest.param("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7" + RANDOM + " user@host",
                     id="ssh-public-key-rsa"),
        pytest.param('"integrity": "sha512-' + RANDOM + RANDOM[::-1] + '=="', id="npm-integrity"),
        pytest.param("-----BEGIN " + "PRIVATE KEY-----\\n...\\n-----END PRIVATE KEY-----",
                     id="private-key-escaped-placeholder"),
        pytest.param("pip install --index-url https://pypi-mirror.internal/simple pkg",
                     id="pypi-prefixed-host"),
        pytest.param("芝麻\u200b喜欢晒太阳\u200d，a\u200bb\ufeff", id="zero-width-in-prose"),
        pytest.param("fixed in 9fceb02d0ae598e95dc970b7\u200b4767f19372d61af8",
                     id="zero-width-in-hash"),
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


def test_an_excerpt_never_shows_a_secret_the_scan_did_not_name() -> None:
    """An AWS key id beside its secret access key (no name before it; after the id it is now
    a match of its own, before it still not): the excerpt that sync, the audit and a refused
    write print must not show it."""
    secret = "IDnOdcdbWB2dC4+DSDC6Lc1mxLpQ2yMK+Ye9FZ1w"
    lines = (f"{AWS_KEY} {secret}", f"aws {secret} then {AWS_KEY}", f"密钥 {AWS_KEY}，{secret}",
             "word " * 60 + f"{AWS_KEY} {secret} " + "word " * 60)
    for line in lines:
        match = next(m for m in find_secrets(line) if m.kind == "aws-access-key-id")
        assert "AKIA****" in match.excerpt_redacted
        assert secret[8:20] not in match.excerpt_redacted, match.excerpt_redacted


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


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        pytest.param(f"postgres://admin:{URL_PASSWORD}@db:5432/app",
                     "postgres://admin:****@db:5432/app", id="url-password"),
        pytest.param(f"redis://:{URL_PASSWORD}@cache", "redis://:****@cache", id="url-no-user"),
        pytest.param(f"amqp://deploy:p@ss{URL_PASSWORD}@mq", "amqp://deploy:****@mq",
                     id="url-at-sign-in-password"),
        pytest.param(f"hook: {SLACK_WEBHOOK} (ops)",
                     "hook: https://hooks.slack.com/services/**** (ops)", id="slack-webhook"),
        pytest.param(f'"key": "{PEM_ESCAPED}"',
                     '"key": "-----BEGIN RSA PRIVATE KEY-----****-----END RSA PRIVATE KEY-----\\n"',
                     id="private-key-escaped-newlines"),
        pytest.param("数据库的密码是 Tr0ub4dor&3，别外传", "数据库的密码是 ****，别外传",
                     id="prose-chinese-password"),
        pytest.param("the password is Tr0ub4dor&3.", "the password is ****.", id="prose-password"),
        pytest.param(f"the secret is {AWS_SECRET}", "the secret is ****", id="prose-aws-secret"),
        pytest.param(f"-p {PYPI} --repository pypi", "-p pypi-**** --repository pypi", id="pypi"),
        pytest.param(f"token {ZERO_WIDTH_GITHUB}!", "token ghp_****!", id="zero-width-token"),
    ],
)
def test_redact_masks_each_new_kind(text: str, masked: str) -> None:
    assert redact(text) == masked


def test_redact_of_a_one_line_key_without_its_end_keeps_the_lines_after_it() -> None:
    text = PEM_ESCAPED.split("-----END")[0] + "\nnext line\n" + PEM + "\nafter\n"
    masked = redact(text)
    assert RANDOM not in masked and RANDOM[::-1] not in masked
    lines = masked.split("\n")
    assert lines[0] == "-----BEGIN RSA PRIVATE KEY-----****"
    assert lines[1:] == ["next line", "-----BEGIN RSA PRIVATE KEY-----", "****",
                         "-----END RSA PRIVATE KEY-----", "after", ""]


def test_zero_width_characters_do_not_shift_line_and_column() -> None:
    text = "intro\n\u200b\u200ba\u200c " + ZERO_WIDTH_GITHUB + " end"
    [match] = find_secrets(text)
    assert (match.line, match.column) == (2, text.split("\n")[1].index("gh") + 1)
    assert match.excerpt_redacted.endswith("ghp_**** end")
    assert GITHUB[12:20] not in match.excerpt_redacted


def test_excerpt_of_a_url_password_shows_the_url_around_it() -> None:
    [match] = find_secrets(f"DATABASE_URL=postgres://admin:{URL_PASSWORD}@db:5432/app")
    assert match.excerpt_redacted == "DATABASE_URL=postgres://admin:****@db:5432/app"
    assert match.column == len("DATABASE_URL=postgres://admin:") + 1
    assert match.label == LABELS["url-password"]


# end to end: what a person runs


def _add(memory_dir: Path, memory_id: str, body: str) -> tuple[int, str]:
    result = cli_process("--dir", str(memory_dir), "add", memory_id, "--description",
                         "connection notes", "--category", "reference", "--body", body)
    return result.returncode, result.stderr.decode()


@pytest.mark.parametrize(
    ("body", "label", "secret"),
    [
        pytest.param(f"DATABASE_URL=postgres://admin:{URL_PASSWORD}@db:5432/app",
                     "password in a URL", URL_PASSWORD, id="url-password"),
        pytest.param(f"alerts: {SLACK_WEBHOOK}", "Slack webhook URL", SLACK_WEBHOOK[-24:],
                     id="slack-webhook"),
        pytest.param("数据库的密码是 Tr0ub4dor&3", "password or secret", "Tr0ub4dor&3",
                     id="prose-chinese-password"),
        pytest.param(f"token {ZERO_WIDTH_GITHUB}", "GitHub token", GITHUB[12:], id="zero-width"),
    ],
)
def test_add_refuses_a_new_kind_of_secret(memory_dir: Path, body: str, label: str,
                                          secret: str) -> None:
    code, err = _add(memory_dir, "reference_conn", body)
    assert_one_line_error(code, err)
    assert label in err and secret not in err
    assert not (memory_dir / "reference_conn.md").exists()


def test_audit_reports_new_kinds_in_a_hand_written_file(memory_dir: Path) -> None:
    write_memory(memory_dir, "reference_keys",
                 "---\ndescription: service account\ncategory: reference\n---\n\n"
                 f'{{"private_key": "{PEM_ESCAPED}"}}\n'
                 f"ci: {PYPI}\n")
    result = cli_process("--dir", str(memory_dir), "audit", "--json")
    assert result.returncode == 1, result.stderr
    findings = [f for f in json.loads(result.stdout)["findings"] if f["check"] == "secret"]
    assert [(f["path"], f["line"]) for f in findings] == [("reference_keys.md", 6),
                                                          ("reference_keys.md", 7)]
    assert "private key" in findings[0]["message"] and "PyPI" in findings[1]["message"]
    assert RANDOM not in result.stdout.decode() and PYPI[5:] not in result.stdout.decode()


def test_prompt_hook_injects_new_kinds_masked(memory_dir: Path) -> None:
    write_memory(memory_dir, "reference_prod_db",
                 "---\ndescription: how to connect to the production database\n"
                 "category: reference\n---\n\n"
                 f"DATABASE_URL=postgres://admin:{URL_PASSWORD}@db:5432/app\n"
                 "数据库的密码是 Xk9#mP2qL\n"
                 f"alerts: {SLACK_WEBHOOK}\n")
    payload = {"session_id": "s1", "prompt": "how do I connect to the production database?",
               "cwd": "/tmp", "hook_event_name": "UserPromptSubmit"}
    result = cli_process("hook", "user-prompt-submit", stdin=json.dumps(payload).encode(),
                         env={"SAGE_MEM_DIR": str(memory_dir)})
    assert result.returncode == 0, result.stderr
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "reference_prod_db" in context
    assert "postgres://admin:****@db:5432/app" in context
    assert "数据库的密码是 ****" in context
    assert "https://hooks.slack.com/services/****" in context
    for secret in (URL_PASSWORD, "Xk9#mP2qL", SLACK_WEBHOOK[-24:]):
        assert secret not in context


@pytest.mark.parametrize("line", [
    f"the staging deploy uses {AWS_KEY} with secret {AWS_SECRET}",
    f"key id {AWS_KEY}, secret access key {AWS_SECRET}",
    f"{AWS_KEY} / {AWS_SECRET}",
])
def test_an_aws_secret_key_beside_its_key_id_is_masked_by_the_prompt_hook(
    memory_dir: Path, line: str
) -> None:
    """A key id and its secret key written as a pair: the hook masked the id and showed the
    secret key whole, since no `secret:` or `is` named it."""
    write_memory(memory_dir, "reference_kiwi_deploy",
                 "---\ndescription: how to deploy the kiwi cluster to staging\n"
                 f"category: reference\n---\n\n{line}\n")
    assert [m.kind for m in find_secrets(line)] == ["aws-access-key-id", "aws-secret-key"]
    payload = {"session_id": "s1", "prompt": "how do I deploy the kiwi cluster to staging?"}
    result = cli_process("hook", "user-prompt-submit", stdin=json.dumps(payload).encode(),
                         env={"SAGE_MEM_DIR": str(memory_dir)})
    assert result.returncode == 0, result.stderr
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "reference_kiwi_deploy" in context
    assert AWS_SECRET not in context and AWS_SECRET[:20] not in context


# a secret in a memory's id: the id is the file name, listed in MEMORY.md, shown by every
# hook's heading and pushed by sync, so it is held to the same rule as the text


def test_a_new_memory_whose_id_holds_a_secret_is_refused_by_every_way_in(
    memory_dir: Path,
) -> None:
    from sage_mem.agents.importers import import_jsonl
    from sage_mem.errors import SecretRefused
    from sage_mem.store import MemoryStore

    before = sorted(p.name for p in memory_dir.iterdir())
    store = MemoryStore(memory_dir, watch=False)
    with pytest.raises(SecretRefused) as refused:
        store.write(f"reference_{GITHUB}", description="my token", category="reference")
    assert "GitHub token" in str(refused.value) and GITHUB not in str(refused.value)
    with pytest.raises(SecretRefused):
        store.create_file(f"notes/{AWS_KEY}", b"---\ndescription: an import\n---\n\nbody\n")
    with pytest.raises(SecretRefused):
        store.rename("user_cat_zh", f"user_{SLACK}")
    assert store.read("user_cat_zh").path.exists()
    line = json.dumps({"id": f"reference_{ANTHROPIC}", "description": "a key", "body": "x"})
    result = import_jsonl(store, __import__("io").StringIO(line))
    assert [item.status for item in result.items] == ["invalid"], result.format_text()
    assert ANTHROPIC not in result.format_text()
    code, err = _add(memory_dir, f"reference_{GITHUB}", "nothing secret here")
    assert_one_line_error(code, err)
    assert "GitHub token" in err and GITHUB not in err
    assert sorted(p.name for p in memory_dir.iterdir()) == before
    catalog = memory_dir / "MEMORY.md"
    assert not catalog.exists() or GITHUB not in catalog.read_text(encoding="utf-8")
    # Said explicitly, it is written, as a secret in the text is.
    store.write(f"reference_{GITHUB}", description="not a live token", category="reference",
                allow_secret=True)
    assert (memory_dir / f"reference_{GITHUB}.md").exists()


def test_hooks_mask_a_secret_in_a_hand_made_id_and_category(memory_dir: Path) -> None:
    write_memory(memory_dir, f"reference_{GITHUB}",
                 "---\ndescription: the otter deploy notes\ncategory: reference\n"
                 "baseline: true\n---\n\nthe otter deploy\n")
    write_memory(memory_dir, "reference_beaver",
                 f"---\ndescription: the beaver deploy notes\ncategory: {GITHUB_OAUTH}\n"
                 "---\n\nthe beaver deploy\n")
    from sage_mem.store import MemoryStore

    MemoryStore(memory_dir, watch=False).close()  # the index cache the hooks answer from
    env = {"SAGE_MEM_DIR": str(memory_dir), "SAGE_MEM_DAEMON": "off"}
    contexts = []
    for event, payload in (
        ("session-start", {"session_id": "s1", "source": "startup", "cwd": "/tmp",
                           "hook_event_name": "SessionStart"}),
        ("user-prompt-submit", {"session_id": "s2", "prompt": "the otter and beaver deploy",
                                "cwd": "/tmp", "hook_event_name": "UserPromptSubmit"}),
    ):
        result = cli_process("hook", event, stdin=json.dumps(payload).encode(), env=env)
        assert result.returncode == 0, result.stderr
        contexts.append(json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"])
    assert "\n> id: reference_ghp_****\n" in contexts[0]
    assert "\n> id: reference_ghp_****\n" in contexts[1]
    assert "\n> category: gho_****\n" in contexts[1]
    for context in contexts:
        assert RANDOM[:20] not in context


def test_audit_reports_a_secret_in_a_file_name_without_printing_it(memory_dir: Path) -> None:
    write_memory(memory_dir, f"project/{GITHUB}",
                 "---\ndescription: deploy notes\ncategory: project\n---\n\nnothing secret\n")
    result = cli_process("--dir", str(memory_dir), "audit", "--json")
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    findings = [f for f in report["findings"] if f["check"] == "secret"]
    assert len(findings) == 1 and "file name" in findings[0]["message"]
    assert "GitHub token" in findings[0]["message"]
    assert RANDOM[:20] not in result.stdout.decode()
    text = cli_process("--dir", str(memory_dir), "audit")
    assert RANDOM[:20] not in text.stdout.decode() + text.stderr.decode()


@pytest.mark.parametrize("key", [pytest.param(PEM, id="rsa"), pytest.param(OPENSSH, id="openssh")])
def test_a_key_pasted_under_a_header_line_already_in_the_file_is_refused(
    memory_dir: Path, key: str
) -> None:
    """Lines already in a file do not block an edit, but a key is several lines: its header
    kept from a placeholder does not let the key material in."""
    from sage_mem.errors import SecretRefused
    from sage_mem.store import MemoryStore

    header, footer = key.split("\n")[0], key.split("\n")[-1]
    store = MemoryStore(memory_dir, watch=False)
    store.write("reference_keys", description="how our deploy keys look", category="reference",
                body=f"The format:\n{header}\n<the key>\n{footer}")
    before = (memory_dir / "reference_keys.md").read_bytes()
    with pytest.raises(SecretRefused, match="private key"):
        store.write("reference_keys", body=f"The format:\n{key}")
    code, err = _add(memory_dir, "reference_keys", f"The format:\n{key}")
    assert_one_line_error(code, err)
    assert "private key" in err and RANDOM not in err
    assert (memory_dir / "reference_keys.md").read_bytes() == before
    # The whole key already in the file (allowed explicitly) still does not block an edit.
    store.write("reference_keys", body=f"The format:\n{key}", allow_secret=True)
    store.write("reference_keys", description="our deploy key, the old one")


# a secret spelled with YAML escapes: the file does not show it, but every reader decodes it
# (MEMORY.md, which Claude Code loads, carries the description as read)

ESCAPED_GITHUB = "\\x67" + GITHUB[1:]  # `\x67` is g: YAML reads the token whole


def test_a_secret_written_with_yaml_escapes_is_found_like_a_plain_one(memory_dir: Path) -> None:
    from sage_mem.errors import SecretRefused
    from sage_mem.store import MemoryStore

    text = (f'---\ndescription: "deploy key {ESCAPED_GITHUB}"\ncategory: reference\n---\n\n'
            "how we deploy\n")
    assert find_secrets(text) == []  # the text itself shows no token
    store = MemoryStore(memory_dir, watch=False)
    with pytest.raises(SecretRefused, match="GitHub token"):
        store.create_file("reference_deploy", text.encode())  # an import
    write_memory(memory_dir, "reference_deploy", text)  # by hand
    result = cli_process("--dir", str(memory_dir), "audit", "--json")
    assert result.returncode == 1, result.stdout
    findings = [f for f in json.loads(result.stdout)["findings"] if f["check"] == "secret"]
    assert [(f["path"], f["line"]) for f in findings] == [("reference_deploy.md", 2)]
    assert "GitHub token" in findings[0]["message"] and RANDOM[:20] not in result.stdout.decode()
    # An edit of a field beside it is not held back by it, as with a plain one; a new one is.
    store.reconcile()
    store.write("reference_deploy", tags=["deploy"])
    other = "\\x67" + GITHUB_OAUTH[1:]
    current = store.read("reference_deploy")
    edited = current.path.read_text(encoding="utf-8").replace(
        "category:", f'summary: "ci {other}"\ncategory:')
    with pytest.raises(SecretRefused, match="GitHub token"):
        store.replace_file("reference_deploy", edited.encode(), expected_sha256=current.sha256)
    # sync's check: such a file is held back, never pushed.
    from sage_mem.sync.steps import secret_reason

    assert secret_reason(text.encode()) is not None


# Passwords named loosely: a few words between the name and its value, no verb at all,
# a short name (`pw`, PIN), a numeric PIN, and a key whose header is all that was pasted.

@pytest.mark.parametrize(
    ("text", "kind"),
    [
        pytest.param("The password for the staging db is Xq7vR2mK9pL", "password",
                     id="password-for-something-is"),
        pytest.param("the passcode to the office door was Xq7vR2mK9pL.", "password",
                     id="passcode-to-something-was"),
        pytest.param("password for prod: Xq7vR2mK9pL", "password",
                     id="password-for-something-colon"),
        pytest.param("密码 Xq7vR2mK9pL", "password", id="chinese-password-then-value"),
        pytest.param("服务器口令Xq7vR2mK9pL，别外传", "password", id="chinese-no-space"),
        pytest.param("我的银行卡密码是 837261", "password", id="chinese-numeric-pin-shi"),
        pytest.param("门禁密码为 4821。", "password", id="chinese-numeric-pin-wei"),
        pytest.param("支付密码：837261", "password", id="chinese-numeric-pin-colon"),
        pytest.param("my PIN is 4821", "password", id="pin-is"),
        pytest.param("the PIN for my debit card is 4821", "password", id="pin-for-something-is"),
        pytest.param("the password is 837261", "password", id="numeric-password-is"),
        pytest.param("I changed my password to Xq7vR2mK9pL", "password", id="password-changed-to"),
        pytest.param("set the PIN to 4821", "password", id="pin-set-to"),
        pytest.param("密码改成了 Xq7vR2mK9pL", "password", id="chinese-password-changed-to"),
        pytest.param("我把门禁密码改为 4821", "password", id="chinese-pin-changed-to"),
        pytest.param("WiFi 密码设置为 Xq7vR2mK9pL", "password", id="chinese-password-set-to"),
        pytest.param("密碼是 Xq7vR2mK9pL", "password", id="traditional-chinese-password-is"),
        pytest.param("資料庫密碼：Xq7vR2mK9pL", "password", id="traditional-chinese-assignment"),
        pytest.param("兩台機器的密碼都是 Xq7vR2mK9pL", "password", id="chinese-password-all-are"),
        pytest.param("银行卡 PIN 是 4821", "password", id="pin-then-chinese-verb"),
        pytest.param("Password (staging): Xq7vR2mK9pL", "password",
                     id="password-parenthesis-colon"),
        pytest.param("Password for the staging db — Xq7vR2mK9pL", "password",
                     id="password-for-something-dash"),
        pytest.param("pw=Xq7vR2mK9pL", "password", id="pw-assignment"),
        pytest.param("pw Xq7vR2mK9pL", "password", id="pw-then-value"),
        pytest.param("login admin / password Xq7vR2mK9pL", "password", id="password-then-value"),
        pytest.param("db_password: 837261", "password", id="numeric-password-assignment"),
        pytest.param("PIN: 4821", "password", id="pin-assignment"),
        pytest.param("the wifi password here is hunter2correct", "password",
                     id="password-adverb-is"),
        pytest.param("wifi pw now is Xq7vR2mK9pL", "password", id="pw-adverb-is"),
        pytest.param("the password is still Xq7vR2mK9pL", "password", id="password-is-adverb"),
        pytest.param("the door PIN here is 4821", "password", id="pin-adverb-is"),
        pytest.param("家里的wifi密码是 hunter2024", "password", id="chinese-letters-and-digits"),
        pytest.param("路由器的密码为hunter2024，别告诉别人", "password",
                     id="chinese-letters-and-digits-no-space"),
        pytest.param("ATM PIN code: 560001", "password", id="atm-pin-code-six-digits"),
        pytest.param("card_pin = 4821", "password", id="card-pin-constant"),
        pytest.param("user-pin: 837261", "password", id="user-pin-constant"),
        pytest.param("-----BEGIN " + "OPENSSH PRIVATE KEY-----", "private-key",
                     id="lone-private-key-header"),
        pytest.param("deploy_key: -----BEGIN " + "OPENSSH PRIVATE KEY-----", "private-key",
                     id="lone-private-key-header-after-a-name"),
        pytest.param('"-----BEGIN ' + 'RSA PRIVATE KEY-----"\n', "private-key",
                     id="lone-private-key-header-quoted"),
        pytest.param("> -----BEGIN " + "OPENSSH PRIVATE KEY-----", "private-key",
                     id="lone-private-key-header-quoted-in-markdown"),
        pytest.param("deploy key:\n```\n-----BEGIN " + "RSA PRIVATE KEY-----\n```\n",
                     "private-key", id="lone-private-key-header-in-a-code-block"),
    ],
)
def test_finds_a_password_named_loosely(text: str, kind: str) -> None:
    assert [m.kind for m in find_secrets(text)] == [kind]
    assert "Xq7vR2mK9pL" not in redact(text) and "837261" not in redact(text)


ORDINARY_PASSWORD_SENTENCES = [
    "the password policy requires 12 characters",
    "The password for the admin account is 12 characters long",
    "the password for new accounts must be at least 8 characters",
    "the password for the app is 2FA-protected",
    "The password manager I use is 1Password",
    "reset your password at the login page",
    "changed the password to something easier",
    "reset the password to the default",
    "set the password to 12 characters",
    "密码改为 8 位以上",
    "密码改成了更长的",
    "pw reset",
    "pw: reset",
    "password = os.environ[\"DB_PASSWORD\"]",
    "password = os.getenv(\"DB_PASSWORD\")",
    "the password for staging is <password>",
    "the password for staging is ********",
    "the password for staging is changeme",
    "the password for the wifi is on the fridge",
    "the password for the router is in 1Password",
    "password length: 16",
    "max_password_length = 1024",
    "PIN codes have 4 digits",
    "the PIN is 4 digits long",
    "the PIN is 6 digits",
    "pin the tab, then pin 3 more",
    "pin_memory=True",
    "a password of 8 characters or more",
    "my password expires in 2025",
    "passwords for the 2024 accounts are rotated",
    "the password was changed on 2024-05-01",
    "password hint: first pet",
    "A PEM starts with -----BEGIN RSA PRIVATE KEY----- and ends with its END line.",
    "-----BEGIN " + "RSA PRIVATE KEY-----\nthen the base64 body\n-----END RSA PRIVATE KEY-----",
    "the default PIN is 1234",
    "密码是 123456 的用户太多了",
    "密碼長度為 12 位",
    "忘記密碼請點擊登入頁的連結",
    "Password (optional): leave blank",
    "password — see the vault",
    "The key starts with -----BEGIN RSA PRIVATE KEY-----",
    "密码要求至少8位",
    "密码要求至少 8 位，包含大小写字母",
    "密码长度为 12 位",
    "密码是 8 到 16 个字符",
    "密码为 6 位数字",
    "忘记密码请点击登录页的链接",
    "密码在 1Password 里",
    "我的密码已经改过了",
    "口令错误三次会锁定账号",
    "密码 2024 年改过一次",
    "银行卡密码是 6 位",
    "请输入 PIN 码",
    # An Indian postal PIN code, and a pin of a board in code: numbers, not secrets.
    "PIN code 560001",
    "Koramangala, Bangalore, PIN code: 560034",
    "pincode 560095, Bangalore",
    "LED_PIN = 2048",
    "GPIO_RESET_PIN: 4095",
    "pin_led = 4182",
    # An adverb between the name and its verb, or a Latin word after 密码是, is still prose.
    "the password here is too short",
    "the wifi password now is on the fridge",
    "密码是 base64 编码的",
    "密码是 sha256 哈希后存的",
    "家里的wifi密码是 xxxxx",
]


@pytest.mark.parametrize("text", ORDINARY_PASSWORD_SENTENCES)
def test_ordinary_sentences_about_passwords_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == []


def _shared_data() -> Path | None:
    """`shared/data` in the nearest folder above the checkout that has one."""
    for folder in Path(__file__).resolve().parents:
        if (folder / "shared" / "data").is_dir():
            return folder / "shared" / "data"
    return None


def test_no_memory_of_the_dev_sets_is_taken_for_a_secret() -> None:
    """Real text in both languages (locomo-dev's chats, zh-dev's encyclopedia sentences and
    persona facts), read where it lies: none of it holds a secret, so none may be found."""
    data = _shared_data()
    folders = [data / "locomo-dev" / "memories", data / "zh-dev"] if data else []
    files = [path for folder in folders if folder.is_dir() for path in folder.rglob("*.md")
             if path.name != "README.md"]
    if len(files) < 1000:
        pytest.skip("the dev sets (shared/data/locomo-dev, shared/data/zh-dev) are not here")
    found = [(path.name, match.kind, match.excerpt_redacted) for path in files
             for match in find_secrets(path.read_text(encoding="utf-8"))]
    assert found == []


# The prefix scan as first written (one case-insensitive group, classes first): the one in
# the module is spelled for speed and must find the same places, non-ASCII folds too.
_PREFIXES_AS_WRITTEN = (
    r"AKIA|ASIA|gh[pousr]_|github_pat_|glpat-|xox[abpre]-|xapp-|sk-|[sr]k_(?:live|test)_|AIza"
    r"|eyJ|pypi-AgE|[Bb][Ee][Aa][Rr][Ee][Rr]|hf_|npm_|SG\.|do[por]_v1_"
    r"|(?i:accountkey|sharedaccesskey|authorization)|mysql|curl|sshpass|docker|redis-cli|SK"
    r"|key-|shp|sq0"
    r"|ATATT3|lin_api_|GOCSPX-|gsk_|r8_|AGE-SECRET-KEY-1|dp\.|hv[sb]\.|M[Tjz]|N[DTjz]|O[DT]"
    r"|sig=|X-Amz-Signature=|X-Goog-Signature="
    r"|AKID|AKLT|ATBB|gl(?:sa|c)_|secret_|sbp_|sntry[su]_|sk\.eyJ1I|pul-|ntn_|dapi|api_org_"
    r"|NRAK-|IQoJb3JpZ2luX2Vj|FwoGZXIvYXdzE|LTAI|LS0tLS1CRUdJTi|PMAK-|tskey-|fo1_|vc[pkia]_"
    r"|EAA|AAAAAAAAAAAAAAAAAAAA"
)


def test_the_prefix_scan_finds_what_its_plain_spelling_finds() -> None:
    import random
    import re

    from sage_mem.checks import credentials

    plain = re.compile(_PREFIXES_AS_WRITTEN)
    pieces = ["AKIA", "ASIA", "ghp_", "gho_", "github_pat_", "glpat-", "xoxb-", "sk-",
              "sk_live_", "rk_test_", "sk_", "AIza", "eyJ", "pypi-AgE", "Bearer", "bEaReR",
              "hf_", "npm_", "SG.", "dop_v1_", "AccountKey", "ACCOUNTKEY", "SharedAccessKey",
              "\u017fharedaccesskey", "sharedacce\u212aey", "Authorization", "authori\u017fation",
              "\u0130", "mysql", "a", "s", "k", "_", "-", " ", "A", "S", "\u017f", "live", "x",
              "xoxe-", "xapp-", "curl", "sshpass", "docker", "redis-cli", "redis", "do", "SK",
              "key-", "shpat_", "sq0atp-", "ATATT3",
              "lin_api_", "GOCSPX-", "gsk_", "r8_", "AGE-SECRET-KEY-1", "dp.", "hvs.", "hvb.",
              "MT", "Nz", "OD", "O", "N", "M", "sig=", "X-Amz-Signature=", "X-Goog-Signature=",
              "AKID", "AKLT", "ATBB", "glsa_", "glc_", "secret_", "sbp_", "sntrys_", "sntryu_",
              "sk.eyJ1I", "pul-", "ntn_", "dapi", "api_org_", "NRAK-", "IQoJb3JpZ2luX2Vj",
              "FwoGZXIvYXdzE", "LTAI", "LS0tLS1CRUdJTi", "PMAK-", "tskey-", "fo1_", "vcp_", "L",
              "I", "F", "P", "t", "f", "v", "NR", "EAA", "E", "AAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAA"]
    rng = random.Random(7)
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        assert ([m.span() for m in credentials._PREFIXES.finditer(text)]
                == [m.span() for m in plain.finditer(text)]), text
    # Every character `re.IGNORECASE` takes for the first letter of a case-insensitive word.
    for first, spelled in (("a", "aA"), ("s", "sS\u017f")):
        folded = re.compile(f"(?i:{first})")
        assert {chr(c) for c in range(0x110000) if folded.fullmatch(chr(c))} == set(spelled)


# The English statement patterns as first written (a look-ahead for the first letter, one
# case-insensitive group behind `\b`): the module's are spelled for speed.
_STATEMENT_AS_WRITTEN = (
    r"""(?=[PpSsAaTt])(?i:\b(?P<name>passwords?|passwd|passphrase"""
    r"""|secret(?:[ \t]++access)?(?:[ \t]++key)?|api[ \t_\-]?key|access[ \t]++key|token))"""
    r"""[ \t]++(?:is|was)(?:[ \t]*+[:：])?[ \t]++"""
)
_LOOSE_NAME_AS_WRITTEN = (
    r"""(?=[Pp])\b(?P<name>(?i:passwords?|passwd|passphrase|passcode|pwd?|pin[ \t]?code)"""
    r"""|PIN)\b"""
)
_STATEMENT_PIECES = [
    "password", "Passwords", "PASSWD", "pa\u017f\u017fphrase", "passcode", "pwd", "PW", "pin",
    "PIN", "Pin code", "pincode", "secret", "Secret", "\u017fecret", "SECRET access key",
    "api key", "API_KEY", "api-\u212aey", "Access  key", "token", "To\u212aen", "x", "_", "é",
    "9", " ", "\t", "\n", " is ", " was ", " IS ", ": ", "：", " for the db", " to ", "是",
    "hunter2Secret!", "'s3cr3t pw'", "Zx9#kLm2", "837261", "-", ".", "(prod)", "here ",
]


def _generated(pieces: list[str], count: int, seed: int = 7, most: int = 12) -> list[str]:
    import random

    rng = random.Random(seed)
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(0, most)))
            for _ in range(count)]


def test_the_statement_patterns_find_what_their_plain_spelling_finds() -> None:
    import re

    from sage_mem.checks import credentials

    value = credentials._STATEMENT_VALUE
    for written, spelled in (
        (_STATEMENT_AS_WRITTEN + value, credentials._STATEMENTS[0]),
        (_LOOSE_NAME_AS_WRITTEN + credentials._LOOSE_STATEMENTS[0].pattern.split(r")\b", 1)[1],
         credentials._LOOSE_STATEMENTS[0]),
    ):
        plain = re.compile(written)
        for text in _generated(_STATEMENT_PIECES, 10_000):
            assert ([(m.span(), m.groupdict()) for m in spelled.finditer(text)]
                    == [(m.span(), m.groupdict()) for m in plain.finditer(text)]), text
    # Every character `re.IGNORECASE` takes for the first letter of a word the gates spell.
    everything = "".join(map(chr, range(0x110000)))
    for first, spelled_as in (("p", "pP"), ("t", "tT"), ("k", "kK\u212a"), ("b", "bB"),
                              ("c", "cC")):
        assert set(re.findall(f"(?i:{first})", everything)) == set(spelled_as)


def _string_constants() -> list[str]:
    """Every string written in this file: the hostile secret shapes tested above."""
    import ast

    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    return sorted({node.value for node in ast.walk(tree)
                   if isinstance(node, ast.Constant) and isinstance(node.value, str)
                   and len(node.value) < 400})


def test_a_detector_is_skipped_only_where_it_would_find_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The gates (`_ENGLISH_NAMES`, `_CHINESE_NAMES`, `_OTHER_KEY_NAMES`, and for a name
    `_may_hold_secrets`) change no span: every shape in this file, alone and glued to
    others, gives what it gives with every detector run."""
    import re

    from sage_mem.checks import credentials

    shapes = _string_constants()
    joins = ["", " ", "_", "-", "/", ".", "\n", "\u200b", "=", ": ", " is ", "密码是", "pin码"]
    glued = [text + join for text in shapes for join in joins[:3]]
    texts = shapes + _generated(glued + joins, 2_000, seed=11, most=5)
    gated = [(credentials._spans(text), credentials._name_spans(text[:200])) for text in texts]
    assert sum(1 for spans, _ in gated if spans) > 300  # the shapes are found at all
    monkeypatch.setattr(credentials, "_ENGLISH_NAMES", re.compile(""))
    monkeypatch.setattr(credentials, "_OTHER_KEY_NAMES", re.compile(""))
    monkeypatch.setattr(credentials, "_CHINESE_NAMES", ("",))
    monkeypatch.setattr(credentials, "_may_hold_secrets", lambda text: True)
    for text, (spans, name_spans) in zip(texts, gated, strict=True):
        assert credentials._spans(text) == spans, text
        assert credentials._name_spans(text[:200]) == name_spans, text


def test_an_id_no_secret_can_be_formed_in_is_judged_by_one_scan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not each part after a join again (`_name_spans`): what a build pays for most ids."""
    from sage_mem.checks import credentials

    calls: list[str] = []
    real = credentials._spans

    def counted(text: str) -> list[tuple[int, int, str, int]]:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(credentials, "_spans", counted)
    assert credentials.find_secrets_in_name("project/t03/user_alpha-beta.notes_12") == []
    assert calls == []
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    assert [match.kind for match in credentials.find_secrets_in_name(f"ref_{token}")] == [
        "github-token"]
