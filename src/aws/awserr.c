/* awserr: parses AWS JSON error envelopes, classifies errors as retryable or
 * not, and is the one place where an AWS error becomes -errno. */
#include "awserr.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "text.h"

void awserr_clear(struct aws_error *e)
{
	memset(e, 0, sizeof(*e));
}

static void copy_bounded(char *out, size_t outlen, const char *s)
{
	struct buf b = BUF_INIT;

	/* Escape so that a hostile message cannot forge log lines. */
	if (text_escape_line(&b, s, strlen(s)) == 0)
		text_copy(out, outlen, buf_str(&b));
	else
		text_copy(out, outlen, "(unprintable)");
	buf_fini(&b);
}

void awserr_set(struct aws_error *e, long http_status, const char *type,
		const char *message)
{
	const char *hash;

	awserr_clear(e);
	e->http_status = http_status;
	if (type) {
		hash = strrchr(type, '#');
		copy_bounded(e->type, sizeof(e->type), hash ? hash + 1 : type);
	}
	if (message)
		copy_bounded(e->message, sizeof(e->message), message);
}

void awserr_set_transport(struct aws_error *e, int neg_errno)
{
	awserr_set_transport_why(e, neg_errno, NULL);
}

void awserr_set_transport_why(struct aws_error *e, int neg_errno,
			      const char *why)
{
	awserr_clear(e);
	e->transport = neg_errno;
	copy_bounded(e->message, sizeof(e->message),
		     why && *why ? why : strerror(-neg_errno));
}

void awserr_from_json(struct aws_error *e, long http_status, const char *body,
		      size_t len)
{
	cJSON *root = NULL, *type, *msg;
	char excerpt[160];

	awserr_clear(e);
	e->http_status = http_status;
	if (body && len)
		root = cJSON_ParseWithLength(body, len);
	if (!root || !cJSON_IsObject(root)) {
		size_t n =
			len < sizeof(excerpt) - 1 ? len : sizeof(excerpt) - 1;

		if (body && n)
			memcpy(excerpt, body, n);
		excerpt[n] = '\0';
		copy_bounded(e->message, sizeof(e->message), excerpt);
		cJSON_Delete(root);
		return;
	}
	type = cJSON_GetObjectItemCaseSensitive(root, "__type");
	msg = cJSON_GetObjectItemCaseSensitive(root, "message");
	if (!cJSON_IsString(msg))
		msg = cJSON_GetObjectItemCaseSensitive(root, "Message");
	awserr_set(e, http_status,
		   cJSON_IsString(type) ? type->valuestring : NULL,
		   cJSON_IsString(msg) ? msg->valuestring : NULL);
	cJSON_Delete(root);
}

static bool type_is(const struct aws_error *e, const char *name)
{
	return !strcmp(e->type, name);
}

bool awserr_is_throttle(const struct aws_error *e)
{
	return type_is(e, "ThrottlingException") || type_is(e, "Throttling") ||
	       type_is(e, "ProvisionedThroughputExceededException") ||
	       type_is(e, "RequestLimitExceeded") ||
	       type_is(e, "TooManyRequestsException") ||
	       type_is(e, "LimitExceededException") || e->http_status == 429;
}

bool awserr_is_condition_failed(const struct aws_error *e)
{
	return type_is(e, "ConditionalCheckFailedException") ||
	       type_is(e, "TransactionCanceledException");
}

bool awserr_is_retryable(const struct aws_error *e)
{
	if (e->transport) {
		switch (e->transport) {
		case -ECONNREFUSED:
		case -ETIMEDOUT:
		case -ECONNRESET:
		case -EHOSTUNREACH:
		case -EIO:
		case -EMFILE: /* no socket now: files may be closed soon */
			return true;
		default:
			return false; /* bad URL, TLS, oversize, ENOMEM */
		}
	}
	if (awserr_is_condition_failed(e))
		return false;
	if (awserr_is_throttle(e))
		return true;
	if (type_is(e, "InternalServerError") ||
	    type_is(e, "ServiceUnavailable") ||
	    type_is(e, "TransactionInProgressException") ||
	    type_is(e, "TransactionConflictException"))
		return true;
	return e->http_status >= 500;
}

int awserr_to_errno(const struct aws_error *e)
{
	static const char *const denied[] = {
		"AccessDeniedException",
		"AccessDenied",
		"UnrecognizedClientException",
		"InvalidSignatureException",
		"MissingAuthenticationTokenException",
		"MissingAuthenticationToken",
		"IncompleteSignatureException",
		"ExpiredTokenException",
		"ExpiredToken",
		"InvalidClientTokenId",
		"SignatureDoesNotMatch",
		"InvalidAccessKeyId",
		NULL
	};
	int i;

	if (e->transport)
		return e->transport;
	if (awserr_is_condition_failed(e))
		return -ECANCELED;
	if (type_is(e, "ResourceNotFoundException"))
		return -ENXIO;
	if (type_is(e, "ResourceInUseException"))
		return -EEXIST;
	for (i = 0; denied[i]; i++)
		if (type_is(e, denied[i]))
			return -EACCES;
	if (e->http_status == 401 || e->http_status == 403)
		return -EACCES;
	if (type_is(e, "ItemCollectionSizeLimitExceededException"))
		return -ENOSPC;
	if (awserr_is_throttle(e))
		return -EAGAIN;
	if (e->http_status >= 500 || type_is(e, "InternalServerError") ||
	    type_is(e, "ServiceUnavailable"))
		return -EIO;
	if (e->http_status >= 400)
		return -EINVAL;
	if (e->http_status >= 200 && e->http_status < 300)
		return -EPROTO; /* a success answer we could not use */
	return -EIO;
}

const char *awserr_format(const struct aws_error *e, char *out, size_t outlen)
{
	if (e->transport)
		snprintf(out, outlen, "connection failed: %s", e->message);
	else if (e->type[0])
		snprintf(out, outlen, "%s (HTTP %ld)%s%s", e->type,
			 e->http_status, e->message[0] ? ": " : "", e->message);
	else
		snprintf(out, outlen, "HTTP %ld%s%s", e->http_status,
			 e->message[0] ? ": " : "", e->message);
	return out;
}
