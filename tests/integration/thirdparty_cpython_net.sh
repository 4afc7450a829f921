# Third-party suite: CPython's own tests of the libraries that run
# servers and clients over loopback (asyncio's event loops, streams,
# servers, sendfile, SSL over sockets and the selector loop; selectors;
# ftplib, whose abort sends urgent data; poplib, smtplib, imaplib,
# telnetlib, http.client, http.server, xmlrpc, urllib over a local
# server, wsgiref), plain and under the library both ways
# (cpython_suite.bash).  ~4 min.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cpython_suite.bash"
cpython_suite 50 test_asyncio.test_base_events test_asyncio.test_events test_asyncio.test_selector_events \
	test_asyncio.test_sendfile test_asyncio.test_server test_asyncio.test_sock_lowlevel \
	test_asyncio.test_ssl test_asyncio.test_sslproto test_asyncio.test_streams test_asyncio.test_unix_events \
	test_selectors test_ftplib test_poplib test_smtplib test_imaplib test_telnetlib test_httplib \
	test_httpservers test_xmlrpc test_urllib2_localnet test_wsgiref
finish
