"""AWS parity found with the public ceph/s3-tests suite (bench/s3tests.sh), issue 37: each test
names the suite case it stands for."""
from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from conftest import err_code, err_status, make_client


def _v2(server):
    return make_client(server.endpoint, signature_version="s3")


@pytest.mark.parametrize("date", ["Tue, 07 Jul 2010 21:53:04 GMT", "Tue, 07 Jul 2030 21:53:04 GMT",
                                  "Tue, 07 Jul 9999 21:53:04 GMT"])
def test_sigv2_date_with_a_wrong_weekday_is_judged_by_its_time(server, bucket, date):
    """s3-tests test_{bucket,object}_create_bad_date_{before_today,after_today,after_end}_aws2:
    S3 ignores the weekday of x-amz-date (those dates are Wednesdays and a Sunday), so a far
    date is 403 RequestTimeTooSkewed, not AccessDenied for a missing date."""
    c = _v2(server)

    def add_date(request, **kwargs):
        request.headers["x-amz-date"] = date

    c.meta.events.register("before-sign.s3.PutObject", add_date)
    with pytest.raises(ClientError) as e:
        c.put_object(Bucket=bucket, Key="k", Body=b"x")
    assert (err_status(e.value), err_code(e.value)) == (403, "RequestTimeTooSkewed")
    assert "The difference between the request time and the current time is too large." in str(e.value)
