#!/usr/bin/env node
// node_peer: npm dynamodb-lock-client (FailClosed) timed the way
// bench/cycle.c and bench/handoff.c time lockfs, for bench/cycle.sh --peers
// and bench/handoff.sh --peers. The library and aws-sdk (v2, its peer
// dependency) come, at pinned versions, from the bench's cache
// (bench/peers/peers.sh puts them on NODE_PATH).
//
//   node_peer.js create-table ENDPOINT TABLE
//       Creates TABLE with HASH lock_key (S) only, on-demand; an existing
//       one is kept. dynamodb-lock-client 0.7.3 cannot use lockfs's table:
//       its FailClosed config schema rejects the sortKey option ("sortKey"
//       is not allowed), and lockfs's table has a RANGE key, so every
//       PutItem without one fails. Same DynamoDB Local, a table of its own.
//
//   node_peer.js cycle ENDPOINT TABLE N THREADS [--warmup W] [--samples FILE]
//       THREADS concurrent loops (one event loop: node's model) over one
//       FailClosed client, each on a key of its own, first W untimed cycles
//       each (default 100: V8 and the connections settle), then N timed
//       cycles each: acquireLock (a conditional PutItem) + release (a
//       conditional DeleteItem). Prints "dynamodb-lock-client cycles=..
//       threads=.. failures=.. total_s=.. per_s=.. p50_us=.. p90_us=..
//       p99_us=..", the line bench_cycle prints.
//
//   node_peer.js handoff ENDPOINT TABLE N POLL_MS [--samples FILE]
//       This process holds a key; a waiter in another process calls
//       acquireLock with acquirePeriodMs POLL_MS and a retryCount that
//       bounds its wait to 10 s (each retry is one more conditional
//       PutItem); the holder releases after a random 200..700 ms.
//       Measured: from the release call to the waiter's callback. Prints
//       "dynamodb-lock-client-release n=.. failed=.. p50_ms=.. p90_ms=..
//       max_ms=..", the line bench_handoff prints. (A FailClosed lock whose
//       holder dies is never freed: there is no death handoff to time.)
//
// Region us-east-1, credentials from the environment, HTTP keep-alive.
// Every wait is bounded. Exit status: 0, 1 if a cycle or sample failed, 2
// on bad usage or a missing library.
"use strict";

process.env.AWS_SDK_JS_SUPPRESS_MAINTENANCE_MODE_MESSAGE = "1";
const child_process = require("child_process");
const fs = require("fs");
const http = require("http");
const readline = require("readline");
let AWS, DynamoDBLockClient;
try {
	AWS = require("aws-sdk");
	DynamoDBLockClient = require("dynamodb-lock-client");
} catch (e) {
	console.error(`node_peer: ${e.message.split("\n")[0]} (run through ` +
		"bench/cycle.sh or bench/handoff.sh --peers, which install it)");
	process.exit(2);
}

const NAME = "dynamodb-lock-client";
const WAIT_MAX_MS = 10000;
const CHILD_MAX_MS = 30000;

const nowUs = () => Number(process.hrtime.bigint() / 1000n);
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function awsConfig(endpoint) {
	return {
		endpoint,
		region: "us-east-1",
		maxRetries: 2,
		httpOptions: {
			agent: new http.Agent({ keepAlive: true, maxSockets: 256 }),
			connectTimeout: 5000,
			timeout: 10000,
		},
	};
}

function lockClient(endpoint, table, acquirePeriodMs, retryCount) {
	return new DynamoDBLockClient.FailClosed({
		dynamodb: new AWS.DynamoDB.DocumentClient(awsConfig(endpoint)),
		lockTable: table,
		partitionKey: "lock_key",
		acquirePeriodMs,
		retryCount,
	});
}

const acquire = (client, key) =>
	new Promise((resolve, reject) =>
		client.acquireLock(key, (err, lock) => (err ? reject(err) : resolve(lock))));
const release = (lock) =>
	new Promise((resolve, reject) =>
		lock.release((err) => (err ? reject(err) : resolve())));

async function createTable(endpoint, table) {
	const ddb = new AWS.DynamoDB(awsConfig(endpoint));
	try {
		await ddb.createTable({
			TableName: table,
			KeySchema: [{ AttributeName: "lock_key", KeyType: "HASH" }],
			AttributeDefinitions: [{ AttributeName: "lock_key", AttributeType: "S" }],
			BillingMode: "PAY_PER_REQUEST",
		}).promise();
	} catch (e) {
		if (e.code !== "ResourceInUseException")
			throw e;
	}
	await ddb.waitFor("tableExists", {
		TableName: table,
		$waiter: { delay: 1, maxAttempts: 30 },
	}).promise();
	return 0;
}

async function cycle(endpoint, table, n, threads, warmup, samples) {
	const client = lockClient(endpoint, table, 0, 0);
	const lat = [];
	let failures = 0;
	const one = async (key) => release(await acquire(client, key));
	const loop = async (i, count, timed) => {
		const key = `bench-node-${process.pid}-${i}`;
		for (let j = 0; j < count; j++) {
			const t0 = nowUs();
			try {
				await one(key);
			} catch (e) {
				if (timed)
					failures++;
			}
			if (timed)
				lat.push(nowUs() - t0);
		}
	};
	const all = (count, timed) =>
		Promise.all(Array.from({ length: threads }, (_, i) => loop(i, count, timed)));
	await all(warmup, false);
	const t0 = nowUs();
	await all(n, true);
	const total = (nowUs() - t0) / 1e6;
	lat.sort((a, b) => a - b);
	const k = lat.length;
	if (samples)
		fs.appendFileSync(samples, lat.map((v) => `${v}\n`).join(""));
	console.log(`${NAME} cycles=${k} threads=${threads} failures=${failures} ` +
		`total_s=${total.toFixed(3)} per_s=${(k / total).toFixed(1)} ` +
		`p50_us=${lat[Math.floor(k / 2)]} p90_us=${lat[Math.floor(k * 9 / 10)]} ` +
		`p99_us=${lat[Math.floor(k * 99 / 100)]}`);
	return failures ? 1 : 0;
}

// Helper process: for each KEY line, acquire it (one try, then a retry every
// POLL_MS ms for at most 10 s), print "got MONOTONIC_MS", release it.
async function waiter(endpoint, table, pollMs) {
	const client = lockClient(endpoint, table, pollMs,
		Math.ceil(WAIT_MAX_MS / pollMs));
	const rl = readline.createInterface({ input: process.stdin });
	console.log("ready");
	for await (const line of rl) {
		console.log("waiting");
		try {
			const lock = await acquire(client, line.trim());
			const t = nowMs();
			await release(lock);
			console.log(`got ${t.toFixed(3)}`);
		} catch (e) {
			console.log(`failed ${e.code || e.message}`);
		}
	}
	return 0;
}

// Lines from a helper process, each read bounded by CHILD_MAX_MS.
function lineReader(stream) {
	const queue = [], waiting = [];
	readline.createInterface({ input: stream }).on("line", (l) => {
		if (waiting.length)
			waiting.shift()(l);
		else
			queue.push(l);
	});
	return () => {
		if (queue.length)
			return Promise.resolve(queue.shift());
		return new Promise((resolve, reject) => {
			const t = setTimeout(() => reject(new Error("helper did not answer")),
				CHILD_MAX_MS);
			waiting.push((l) => { clearTimeout(t); resolve(l); });
		});
	};
}

async function handoff(endpoint, table, n, pollMs, samples) {
	const client = lockClient(endpoint, table, 0, 0);
	const child = child_process.spawn(process.execPath,
		[__filename, "_waiter", endpoint, table, String(pollMs)],
		{ stdio: ["pipe", "pipe", "inherit"] });
	const read = lineReader(child.stdout);
	const vals = [];
	let failed = 0;
	try {
		if ((await read()) !== "ready")
			throw new Error("waiter did not start");
		for (let i = 0; i < n; i++) {
			const key = `handoff-node-${process.pid}-${i}`;
			const lock = await acquire(client, key);
			child.stdin.write(`${key}\n`);
			await read(); // "waiting": it is about to try the key
			await sleep(200 + Math.random() * 500);
			const t0 = nowMs();
			await release(lock);
			const got = (await read()).split(" ");
			if (got[0] === "got")
				vals.push(Number(got[1]) - t0);
			else
				failed++;
		}
	} finally {
		child.kill("SIGKILL");
	}
	if (!vals.length) {
		console.error("node_peer: every handoff failed");
		return 1;
	}
	vals.sort((a, b) => a - b);
	const k = vals.length;
	if (samples)
		fs.appendFileSync(samples, vals.map((v) => `${v.toFixed(3)}\n`).join(""));
	console.log(`${NAME}-release n=${k} failed=${failed} ` +
		`p50_ms=${vals[Math.floor((k - 1) / 2)].toFixed(1)} ` +
		`p90_ms=${vals[Math.floor((k * 9 - 1) / 10)].toFixed(1)} ` +
		`max_ms=${vals[k - 1].toFixed(1)}`);
	return failed ? 1 : 0;
}

function usage() {
	console.error("usage: node_peer.js create-table ENDPOINT TABLE\n" +
		"       node_peer.js cycle ENDPOINT TABLE N THREADS [--warmup W] [--samples FILE]\n" +
		"       node_peer.js handoff ENDPOINT TABLE N POLL_MS [--samples FILE]");
	process.exit(2);
}

async function main(argv) {
	const opt = (name, dflt) => {
		const i = argv.indexOf(name);
		if (i < 0)
			return dflt;
		const v = argv[i + 1];
		argv.splice(i, 2);
		if (v === undefined)
			usage();
		return v;
	};
	const warmup = Number(opt("--warmup", "100"));
	const samples = opt("--samples", "");
	const [cmd, endpoint, table, a, b] = argv;
	const whole = (s, lo, hi) => {
		const v = Number(s);
		if (!Number.isInteger(v) || v < lo || v > hi)
			usage();
		return v;
	};
	if (!endpoint || !table)
		usage();
	switch (cmd) {
	case "create-table":
		return createTable(endpoint, table);
	case "cycle":
		return cycle(endpoint, table, whole(a, 1, 1e7), whole(b, 1, 256),
			whole(warmup, 0, 1e6), samples);
	case "handoff":
		return handoff(endpoint, table, whole(a, 1, 1e5), whole(b, 1, 1e5), samples);
	case "_waiter":
		return waiter(endpoint, table, whole(a, 1, 1e5));
	default:
		return usage();
	}
}

main(process.argv.slice(2)).then((rc) => process.exit(rc), (e) => {
	console.error(`node_peer: ${e.message}`);
	process.exit(1);
});
