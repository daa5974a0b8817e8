// Package geode is the ndbench driver for Apache Geode, over Geode's developer REST API:
// a write is PUT {url}/{region}/{key}, a read GET {url}/{region}/{key}, a 404 from the
// API a miss. It is the protocol a Go client can use: Geode's own client/server protocol
// has Java and C++/.NET clients only, and the experimental Protobuf protocol that was meant
// for other languages was removed from Geode's development branch in March 2021
// (GEODE-8997, apache/geode pull request 6168). NDBench's Geode plugin used the Java client, with a region
// named ndbench.
//
// # Server
//
// The REST API runs in Geode servers started with start-dev-rest-api=true (gfsh: start
// server --start-rest-api --http-service-port=7070); the region must exist (gfsh: create
// region --name=ndbench --type=PARTITION). Its web application, the geode-web-api war,
// ships in Geode's distribution (tools/Extensions). On Maven Central it is published up to
// 1.14.4 only (geode-http-service up to 1.15.0, geode-core up to 2.0.2), so the test server
// (internal/testserver, installed by scripts/install-geode.sh) is Geode 1.14.4 assembled
// from Central: one JVM with a server, an embedded locator and the REST API, and
// swagger-annotations added to the class path, where the distribution has it (without it
// the web application does not start and every call answers 503). The API is the same in
// the 1.15 distribution.
//
// # Values and keys
//
// The API stores JSON documents (as PDX), not bytes, so a value travels as
// {"v": "<base64>"}: 4/3 of its size plus the document's overhead, and every byte comes
// back exactly. Keys are path segments, and the API cannot address all of them: a comma
// lists several keys, an escaped %, ;, / or \ and the keys . and .. are answered with HTTP
// 500, and a non-ASCII key is stored under one name and looked up under another. The driver
// refuses such keys (rejected) instead of misreading them; ndbench's generated keys are
// plain ASCII.
//
// # Errors
//
//	404 with Geode's {"cause": ...}: a missing key (read, a miss) or region  rejected
//	404 without it (the web application not deployed: a server starting)    unavailable
//	other 4xx (bad request, 401/403 with a security manager)                rejected
//	429                                                                     throttled
//	502, 503, refused or reset connections                                  unavailable
//	408, 504, the op's deadline, the timeout option                         timeout
//
// With a username, requests carry HTTP basic authentication (a server with a
// SecurityManager); the password is secret and never shown. An https:// url uses the tls
// options.
//
// # What it measures
//
// Every operation goes through the server's web layer (Jetty, Spring MVC, Jackson, and a
// put stores the document as PDX): on the test machine the server spent about 14 times the
// client's CPU per operation (docs/performance.md). The figures are those of the REST API,
// not of Geode's own client protocol, which a Go program cannot speak.
//
// # Project status
//
// VMware stopped contributing to Geode in 2022, and in October 2022 the project failed to
// keep the three active PMC members it needs and a vote to move it to the Apache Attic was
// cast (Spring Data for Apache Geode's README, which dropped Geode from the Spring Data
// release train for that reason); Maven Central nevertheless lists geode-core 2.0.0 and
// 2.0.2. Check the project's state before choosing it for new work.
package geode
