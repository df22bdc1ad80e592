-- Grants and bindings may take effect at another time than when they were recorded (`--effective-at`).
-- effective_from: when this version took effect; effective_to: when the change that ended it took effect.
ALTER TABLE grant_history ADD COLUMN effective_from TIMESTAMPTZ;
ALTER TABLE grant_history ADD COLUMN effective_to TIMESTAMPTZ;
ALTER TABLE binding_history ADD COLUMN effective_from TIMESTAMPTZ;
ALTER TABLE binding_history ADD COLUMN effective_to TIMESTAMPTZ;
