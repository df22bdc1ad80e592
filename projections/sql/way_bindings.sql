-- effective_ways.py: the current bindings of the units $units, with their connector's namespace.
SELECT b.unit, b.slug, k.namespace
FROM binding_history b JOIN connector_history k ON k.slug = b.slug AND k.valid_to IS NULL
WHERE b.valid_to IS NULL AND b.unit = ANY($units::VARCHAR[])
