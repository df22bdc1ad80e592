-- ADR-027's `match_all_classes` on the "after" side of a route rule: one earlier call whose tool has every
-- one of these classes arms the rule. Rules recorded before it had none: an empty list, not NULL.
ALTER TABLE route_rule_history ADD COLUMN after_all_classes VARCHAR[] DEFAULT [];
UPDATE route_rule_history SET after_all_classes = [] WHERE after_all_classes IS NULL;
