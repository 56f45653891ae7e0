#!/usr/bin/env node
'use strict';
require('../dist/src/cli/index.js').main(process.argv.slice(2));
