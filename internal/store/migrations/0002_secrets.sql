-- 0002: per-tenant named secrets (internal/secrets). The value is never
-- stored in the clear: ciphertext is base64 text of what internal/secrets
-- seals with AES-256-GCM (format version, key id, nonce, sealed value), bound
-- to its tenant and name, so a ciphertext copied to another row fails to open.

CREATE TABLE secrets (
    tenant_id  TEXT NOT NULL REFERENCES tenants (id),
    name       TEXT NOT NULL,
    ciphertext TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, name)
);
