// Preloaded (--require) into a measured child: at exit, writes its CPU time and peak RSS (the whole process, worker
// threads included) as JSON to fd 3, which the bench opened as a pipe.
'use strict';
const { writeSync } = require('node:fs');

process.on('exit', () => {
  const u = process.resourceUsage();
  try {
    writeSync(3, JSON.stringify({ maxRssKb: u.maxRSS, userUs: u.userCPUTime, systemUs: u.systemCPUTime }));
  } catch {
    /* not run by the bench */
  }
});
