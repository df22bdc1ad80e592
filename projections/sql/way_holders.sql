-- effective/fast_ways.py: the current grants of the holders $names ('grant', holder kind, holder, target,
-- tool key) and the current bindings of the units $units with their connector ('binding', 'unit', unit,
-- slug, namespace): every way a subject's chain can grant a tool besides the platform and its image.
SELECT 'grant', subject_kind, subject, target, tool_key
FROM grant_history WHERE valid_to IS NULL AND subject = ANY($names::VARCHAR[])
UNION ALL
SELECT 'binding', 'unit', b.unit, b.slug, k.namespace
FROM binding_history b JOIN connector_history k ON k.slug = b.slug AND k.valid_to IS NULL
WHERE b.valid_to IS NULL AND b.unit = ANY($units::VARCHAR[])
