-- One case of `mesh bench directory` for wrk: the paths given after `--` in turn, then the run's
-- figures as one JSON line (latencies in microseconds) for bench/directory/node.ts to read.
local paths, next = {}, 0

function init(args)
  for n = 1, #args do paths[n] = args[n] end
end

function request()
  next = next % #paths + 1
  return wrk.format("GET", paths[next])
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"durationUs":%d,"socketErrors":%d,"statusErrors":%d,"timeouts":%d,"p50Us":%d,"p99Us":%d,"maxUs":%d}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end
