-- effective/fast_ways.py: the tool keys the image each current unit of $names runs declares (none: no row).
SELECT unit, tool_keys FROM unit_image_history WHERE valid_to IS NULL AND unit = ANY($names::VARCHAR[])
