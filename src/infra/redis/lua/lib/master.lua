-- The replication id of the server running the script. A replica promoted to master, a restarted
-- server and a master that was a replica in between each answer a new one, so voucher state
-- stamped with it (field verifiedOn) was verified against the database on THIS master, and state
-- carried over from another master (what a replica received before a failover) is not.
-- (A master without replicas for repl-backlog-ttl also takes a new one: one needless verification.)
-- INFO is the only way a script learns which server runs it: about 6 µs per call, measured.
local function sk_master()
  return string.match(redis.call('INFO', 'replication'), 'master_replid:(%x+)')
end
