-- 0001: the control plane's tables. Portable SQL, run unchanged by SQLite and
-- PostgreSQL: TEXT ids, BIGINT unix nanoseconds (UTC) for times, NULL for "not
-- yet", JSON stored as TEXT.

CREATE TABLE tenants (
    id                  TEXT PRIMARY KEY,
    name                TEXT NOT NULL,
    created_at          BIGINT NOT NULL,
    max_concurrent_jobs BIGINT NOT NULL DEFAULT 0, -- 0: unlimited
    max_sandboxes       BIGINT NOT NULL DEFAULT 0  -- 0: unlimited
);

CREATE TABLE tokens (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants (id),
    name         TEXT NOT NULL DEFAULT '',
    hash         TEXT NOT NULL UNIQUE, -- SHA-256 hex of the token; the token itself is never stored
    admin        BOOLEAN NOT NULL DEFAULT FALSE,
    created_at   BIGINT NOT NULL,
    revoked_at   BIGINT,
    last_used_at BIGINT
);
CREATE INDEX tokens_tenant ON tokens (tenant_id, created_at);

CREATE TABLE jobs (
    id               TEXT PRIMARY KEY,
    tenant_id        TEXT NOT NULL REFERENCES tenants (id),
    spec             TEXT NOT NULL,             -- JSON: the accepted POST /v1/jobs body
    status           TEXT NOT NULL,
    status_reason    TEXT NOT NULL DEFAULT '',
    sandbox_id       TEXT NOT NULL DEFAULT '',
    runtime          TEXT NOT NULL DEFAULT '',
    created_at       BIGINT NOT NULL,
    started_at       BIGINT,
    finished_at      BIGINT,
    result           TEXT,                      -- JSON {summary,exit_code,branch,pr_url}
    labels           TEXT NOT NULL DEFAULT '{}',-- JSON object of strings
    attempts         BIGINT NOT NULL DEFAULT 0, -- how many times the job was claimed
    claimed_by       TEXT NOT NULL DEFAULT '',  -- worker holding the lease, '' if none
    claim_expires_at BIGINT,
    next_seq         BIGINT NOT NULL DEFAULT 1, -- seq the next event of this job gets
    CHECK (status IN ('pending', 'creating', 'running', 'completing', 'completed', 'failed', 'cancelled'))
);
-- Listing newest first, with and without a status filter (keyset paging).
CREATE INDEX jobs_tenant_created ON jobs (tenant_id, created_at, id);
CREATE INDEX jobs_tenant_status ON jobs (tenant_id, status, created_at, id);
-- The claim queue: oldest pending first.
CREATE INDEX jobs_pending ON jobs (created_at, id) WHERE status = 'pending';

CREATE TABLE events (
    job_id TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    seq    BIGINT NOT NULL,  -- 1, 2, 3... per job, without gaps
    time   BIGINT NOT NULL,
    type   TEXT NOT NULL,
    data   TEXT NOT NULL,    -- JSON
    PRIMARY KEY (job_id, seq)
);

CREATE TABLE sandboxes (
    id             TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL REFERENCES tenants (id),
    runtime        TEXT NOT NULL,
    template       TEXT NOT NULL DEFAULT '',
    status         TEXT NOT NULL,
    spec           TEXT NOT NULL DEFAULT '{}', -- JSON: the accepted POST /v1/sandboxes body
    labels         TEXT NOT NULL DEFAULT '{}', -- JSON object of strings
    created_at     BIGINT NOT NULL,
    expires_at     BIGINT,
    last_active_at BIGINT NOT NULL
);
CREATE INDEX sandboxes_tenant ON sandboxes (tenant_id, created_at, id);
